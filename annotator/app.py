"""qrelkit's Streamlit entry point: page config, the login gate, and navigation built from the user's role."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotator import auth, state

PAGES = Path(__file__).resolve().parent / "screens"

# Lead pages, in menu order.
LEAD_PAGES = (
    ("lead_project.py", "Project", ":material/settings:"),
    ("lead_agreement.py", "Agreement", ":material/handshake:"),
    ("lead_adjudicate.py", "Adjudicate", ":material/gavel:"),
    ("lead_guidelines.py", "Guidelines", ":material/edit_note:"),
    ("lead_releases.py", "Releases", ":material/inventory_2:"),
    ("lead_evaluate.py", "Evaluate", ":material/monitoring:"),
)


def judge_pages() -> list:
    """Pages every logged-in user gets: blind grading and the guideline."""
    return [
        st.Page(PAGES / "annotate.py", title="Annotate", icon=":material/rate_review:", default=True),
        st.Page(PAGES / "guideline.py", title="Guideline", icon=":material/menu_book:"),
    ]


def lead_pages() -> list:
    """The lead desk pages."""
    return [st.Page(PAGES / name, title=title, icon=icon) for name, title, icon in LEAD_PAGES]


def sidebar(user) -> None:
    """Who is logged in, which project, and the way out."""
    with st.sidebar:
        st.markdown(f"**{user.username}** · {user.role}")
        state.project_picker()
        st.button("Log out", on_click=auth.logout, icon=":material/logout:")


def main() -> None:
    """Gate on login, then offer only the pages the user's role allows (unlisted pages cannot be opened)."""
    st.set_page_config(page_title="qrelkit", page_icon=":material/fact_check:", layout="wide")
    state.engine()
    user = auth.current_user()
    if user is None:
        st.navigation([st.Page(auth.login_page, title="Log in", url_path="login", default=True)]).run()
        return
    sidebar(user)
    pages = {"Judge": judge_pages()}
    if user.role == "lead":
        pages["Lead"] = lead_pages()
    st.navigation(pages).run()


if __name__ == "__main__":  # `streamlit run` (and AppTest) execute this file as __main__
    main()
