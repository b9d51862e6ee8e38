"""Persistence: tables, engine, schema and migrations, and the frames read from them."""
