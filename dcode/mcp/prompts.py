"""MCP prompts as slash commands: ``/mcp__server__prompt args`` sends the prompt the server
makes of the arguments, as if typed (in the TUI and in ``dcode -p``).

The words typed after the name fill the prompt's arguments in the order the server lists
them (quotes group words; the last argument takes whatever words are left). What the server
answers becomes one prompt: its text as text, text resources inlined, resource links named;
a message the server gives as the assistant's is marked as such.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp import McpError
from mcp.types import (
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from dcode.mcp.failures import clean
from dcode.mcp.names import is_prompt_command, tool_name
from dcode.mcp.results import link_text, resource_blocks

if TYPE_CHECKING:
    from dcode.mcp.link import ServerLink

__all__ = ["PromptCommand", "PromptError", "expand", "is_prompt_command", "prompt_commands"]


class PromptError(Exception):
    """Why a prompt command could not be made: one line for the user."""


@dataclass(frozen=True, slots=True)
class PromptCommand:
    name: str
    """``mcp__server__prompt``: what is typed after the slash."""
    server: str
    prompt: Prompt

    @property
    def usage(self) -> str:
        arguments = self.prompt.arguments or []
        return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in arguments)

    @property
    def label(self) -> str:
        """What the ``/`` popup says of it."""
        description = " ".join(
            (self.prompt.description or self.prompt.title or self.prompt.name).split()
        )[:80]
        return f"{description}{f' {self.usage}' if self.usage else ''} (MCP {self.server})"


def prompt_commands(links: list[ServerLink]) -> dict[str, tuple[PromptCommand, ServerLink]]:
    """The prompts of the connected servers, by command name."""
    from dcode.mcp.state import LinkState

    found: dict[str, tuple[PromptCommand, ServerLink]] = {}
    for link in links:
        if link.state is not LinkState.CONNECTED:
            continue
        for prompt in link.prompts:
            command = PromptCommand(tool_name(link.name, prompt.name), link.name, prompt)
            found.setdefault(command.name, (command, link))
    return found


def arguments_for(command: PromptCommand, typed: str) -> dict[str, str]:
    """The prompt's arguments from the words typed after the command's name."""
    try:
        words = shlex.split(typed)
    except ValueError:  # an unclosed quote: the words are what the spaces give
        words = typed.split()
    declared = command.prompt.arguments or []
    values: dict[str, str] = {}
    for index, argument in enumerate(declared):
        if index >= len(words):
            break
        values[argument.name] = (
            " ".join(words[index:]) if index == len(declared) - 1 else words[index]
        )
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        raise PromptError(
            f"/{command.name} needs {', '.join(missing)}: /{command.name} {command.usage}"
        )
    if words and not declared:
        raise PromptError(f"/{command.name} takes no arguments")
    return values


async def expand(links: list[ServerLink], typed: str) -> str:
    """The prompt ``/mcp__server__prompt args`` sends; raises ``PromptError``."""
    name, _, rest = typed.strip()[1:].partition(" ")
    commands = prompt_commands(links)
    if name not in commands:
        raise PromptError(
            f"unknown command /{name}: no connected MCP server has that prompt (/mcp lists them)"
        )
    command, link = commands[name]
    values = arguments_for(command, rest)
    try:
        result = await link.get_prompt(command.prompt.name, values)
    except McpError as exc:
        raise PromptError(
            f"the MCP server {link.name} refused /{name}: {clean(exc.error.message)}"
        ) from None
    except (LookupError, TimeoutError) as exc:
        raise PromptError(
            f"/{name}: {clean(str(exc)) or 'the MCP server did not answer'}"
        ) from None
    text = prompt_text(result)
    if not text.strip():
        raise PromptError(f"the MCP server {link.name} gave /{name} no text")
    return text


def prompt_text(result: GetPromptResult) -> str:
    parts = []
    for message in result.messages:
        text = _content_text(message.content)
        parts.append(
            text if message.role == "user" else f"(the server's {message.role} message)\n{text}"
        )
    return "\n\n".join(parts)


def _content_text(content: object) -> str:
    match content:
        case TextContent(text=text):
            return text
        case ImageContent(mimeType=mime):
            return f"[{mime} image: not shown]"
        case ResourceLink():
            return link_text(content)
        case EmbeddedResource(resource=TextResourceContents(text=text)):
            return text
        case EmbeddedResource(resource=resource):
            (block,) = resource_blocks([resource])
            return (
                block.text
                if isinstance(block, TextContent)
                else f"[{resource.mimeType or 'binary'} at {resource.uri}: not shown]"
            )
    return f"[{getattr(content, 'type', 'content')}: not shown]"
