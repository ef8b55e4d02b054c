"""What every app uses: HTTP file responses (and, as the house grows, jobs, tokens, permissions)."""
