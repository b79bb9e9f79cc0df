"""What turns typed text into a prompt: ``@`` mentions, the files they send, and your own
slash commands."""
