"""The Streamlit app: session, state, text helpers, components and the pages."""
