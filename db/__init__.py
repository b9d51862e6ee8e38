"""The golden-set store: schema, migrations and the workflow operations as plain functions over an Engine."""
