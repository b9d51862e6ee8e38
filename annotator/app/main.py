"""qrelkit's Streamlit entry point: page config, the login gate, and navigation built from the user's role."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotator.app import auth, errors, state
from annotator.app.sidebar import project_picker
from annotator.app.text import literal
from eval_core.vocab import Role

PAGES = Path(__file__).resolve().parent / "screens"

# Lead pages, in menu order. Pages have no icon: Streamlit makes the open page's icon the tab's favicon, and
# fetches a `:material/…:` one from fonts.gstatic.com on every page, while emoji need an emoji font to show.
LEAD_PAGES = (
    ("lead_project.py", "Project"),
    ("lead_agreement.py", "Agreement"),
    ("lead_adjudicate.py", "Adjudicate"),
    ("lead_guidelines.py", "Guidelines"),
    ("lead_releases.py", "Releases"),
    ("lead_evaluate.py", "Evaluate"),
    ("lead_judges.py", "Judges"),
    ("lead_controls.py", "Controls"),
)


def judge_pages() -> list:
    """Pages every logged-in user gets: blind grading and the guideline."""
    return [
        st.Page(PAGES / "annotate.py", title="Annotate", default=True),
        st.Page(PAGES / "guideline.py", title="Guideline"),
    ]


def lead_pages(visible: bool) -> list:
    """The lead desk pages; registered for everyone (a link must not say "Page not found"), listed for leads."""
    return [
        st.Page(PAGES / name, title=title, visibility="visible" if visible else "hidden") for name, title in LEAD_PAGES
    ]


def sidebar(user) -> None:
    """Who is logged in, which project, and the way out."""
    with st.sidebar:
        st.markdown(f"**{literal(user.username)}** · {user.role}")
        project_picker()
        st.button("Log out", on_click=auth.logout, icon=":material/logout:")
        auth.sync_cookie()


def main() -> None:
    """Every page is registered for everyone, so a link (e.g. /lead_agreement) survives the login and opens its
    page afterwards; the menu lists what the role opens, and a lead page tells an annotator it is not allowed."""
    st.set_page_config(page_title="qrelkit", layout="wide")  # no material page_icon: its favicon is fetched from Google
    with errors.store_outage():
        _run_page()


def _run_page() -> None:
    """Resolve the session, build the menu for the role, and run the open page (or the login form)."""
    state.engine()
    user = auth.current_user()
    is_lead = user is not None and user.role == Role.LEAD
    judge, lead = judge_pages(), lead_pages(visible=is_lead)
    page = st.navigation(
        {"Judge": judge, "Lead": lead} if is_lead else judge + lead,
        position="sidebar" if user is not None else "hidden",
    )
    if user is None:
        auth.login_page()
        return
    sidebar(user)
    if flash := auth.take_flash():  # a guarded write's sentence (a fragment shows its own on a fragment rerun)
        st.warning(flash)
    if not is_lead and page.url_path in {p.url_path for p in lead}:
        auth.not_allowed(user, Role.LEAD)
        return
    page.run()


if __name__ == "__main__":  # `streamlit run` (and AppTest) execute this file as __main__
    main()
