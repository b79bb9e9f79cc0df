"""Rewind: take a session back to before one of its prompts, the conversation, the code, or both.

- the session store (``dcode.agent.store``) keeps the session's turns (each prompt, and the
  thread's checkpoint before it) and the file changes dcode's own file tools made (``changes``);
- ``blobs``: what a file held before such a change, by content hash, under ``$DCODE_HOME``;
- ``code``: which files a rewind puts back, and doing it without losing what is there now;
- ``conversation``: the thread as it was before a prompt, as a new checkpoint of the same thread.

Only changes made through ``write_file`` and ``edit_file`` (by the session's agent or its
subagents) are recorded; what a shell command or an MCP tool did to a file is not, and a rewind
says so. ``dcode sessions rewind`` lists the turns from the store without loading the agent.
"""
