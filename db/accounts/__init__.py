"""Accounts: users, sessions, login back-off and the permission checks every operation runs."""
