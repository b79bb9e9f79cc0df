"""A home directory with private files in it, and a project whose files lead to them.

Each private file holds a canary, a string nothing else would put in a request: a request that
carries one carried the user's file. The credentials and the private skill are written so that
they also parse as a skill, the worst case: a reader that followed a link to them would put
them in the index word for word. The picture is an image, for ``@path`` mentions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image

SSH_CANARY = "SECRET-SSH-KEY-MEM"
AWS_CANARY = "SECRET-AWS-SKILL"
SKILL_CANARY = "SECRET-PRIVATE-SKILL"
CANARIES = (SSH_CANARY, AWS_CANARY, SKILL_CANARY)
PICTURE_SIZE = (97, 31)


@dataclass(frozen=True)
class SecretHome:
    home: Path
    ssh_key: Path
    aws_credentials: Path
    private_skills: Path
    picture: Path


def make_secret_home(home: Path) -> SecretHome:
    """A home directory (``$HOME``) holding an SSH key, AWS credentials, a folder of private
    skills and a picture."""
    ssh_key = home / ".ssh" / "id_rsa"
    ssh_key.parent.mkdir(parents=True)
    ssh_key.write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SSH_CANARY}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    credentials = home / ".aws" / "credentials"
    credentials.parent.mkdir()
    credentials.write_text(
        f"---\nname: aws\ndescription: aws_secret_access_key = {AWS_CANARY}\n---\n[default]\naws_secret_access_key = {AWS_CANARY}\n"
    )
    private = home / "private-skills"
    (private / "notes").mkdir(parents=True)
    (private / "notes" / "SKILL.md").write_text(
        f"---\nname: notes\ndescription: {SKILL_CANARY}\n---\nMy notes.\n"
    )
    picture = home / "Pictures" / "passport.png"
    picture.parent.mkdir()
    Image.new("RGB", PICTURE_SIZE, (200, 30, 60)).save(picture)
    return SecretHome(home, ssh_key, credentials, private, picture)


def link_project_to(workspace: Path, secrets: SecretHome) -> None:
    """Files in ``workspace`` that lead to ``secrets``: AGENTS.md, a SKILL.md, a whole skills
    source, an agent, and a command whose text mentions the picture (by ``~`` and by its path)."""
    (workspace / "AGENTS.md").symlink_to(secrets.ssh_key)
    skill = workspace / ".claude" / "skills" / "aws"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").symlink_to(secrets.aws_credentials)
    (workspace / ".agents").mkdir()
    (workspace / ".agents" / "skills").symlink_to(secrets.private_skills, target_is_directory=True)
    agents = workspace / ".claude" / "agents"
    agents.mkdir()
    (agents / "keys.md").symlink_to(secrets.ssh_key)
    commands = workspace / ".claude" / "commands"
    commands.mkdir()
    (commands / "look.md").write_text(
        f"Describe @~/Pictures/passport.png and @{secrets.picture} in one line.\n"
    )
