"""The demo project: drawn images, response pairs with trade-offs, accounts and simulated work."""
