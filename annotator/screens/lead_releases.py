"""Lead page: cut an immutable golden-set release by a consensus rule, read its card, diff it, download it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotator import views, views_release
from db import releases

RULES = ("median", "majority", "mean", "min")
RULE_HELP = ("median: lower median on ties (default) · majority: ties go to the lower grade · "
             "mean: rounded half up · min: pessimistic. An adjudicated grade always wins; "
             "\"can't judge\" never counts.")
DOWNLOADS = (("qrels.trec", "TREC qrels", "text/plain"), ("qrels.tsv", "BEIR qrels (TSV)", "text/tab-separated-values"),
             ("judgments.jsonl", "JSONL (every grade)", "application/x-ndjson"),
             ("qrels.csv", "CSV", "text/csv"), ("card.json", "Card (JSON)", "application/json"))

engine, user = views.lead_page("Releases")
project = views.pick_project(engine)
if project is None:
    st.stop()

with st.form("create-release"):
    st.subheader("New release")
    left, right = st.columns(2)
    rule = left.selectbox("Consensus rule", RULES, help=RULE_HELP)
    min_grades = right.number_input("Minimum grades per pair", min_value=1, max_value=20, value=1, step=1)
    if st.form_submit_button("Create release"):
        try:
            with st.spinner("Building the release…"):
                made = releases.create_release(engine, project.name, rule=rule, min_grades=int(min_grades),
                                               actor=user.username)
        except (ValueError, RuntimeError) as exc:
            st.error(f"No release: {exc}")
        else:
            st.success(f"Release {made.version} created ({rule}, at least {int(min_grades)} grade(s) per pair).")

listed = releases.list_releases(engine, project.name)
if not listed:
    st.info("No release yet.")
    st.stop()

st.subheader("Releases")
st.dataframe(pd.DataFrame([views_release.release_row(r) for r in listed]), hide_index=True, width="stretch")
versions = sorted((r.version for r in listed), reverse=True)
version = st.selectbox("Release", versions, index=0)
release = releases.get_release(engine, project.name, version)

st.subheader(f"Card — release {version}")
card = release.card
for col, (label, value) in zip(st.columns(4), views_release.card_headline(card), strict=True):
    col.metric(label, value)
st.dataframe(views_release.grade_distribution(card), hide_index=True)
st.caption(f"Rule {card.get('rule')} · at least {card.get('min_grades')} grade(s) per pair · guideline versions "
           f"{', '.join(map(str, card.get('guideline_versions', []))) or '—'} · content hash "
           f"{card.get('content_hash', release.content_hash)}")
with st.expander("Full card"):
    st.json(card)

st.subheader("Downloads")
files = releases.release_files(engine, project.name, version)
cols = st.columns(len(DOWNLOADS))
for col, (name, label, mime) in zip(cols, DOWNLOADS, strict=True):
    if name in files:
        col.download_button(label, files[name], file_name=f"{project.name}-v{version}-{name}", mime=mime,
                            key=f"download-{name}", on_click="ignore")

older = [v for v in versions if v < version]
if older:
    st.subheader(f"Diff against release {older[0]}")
    diff = releases.diff_releases(engine, project.name, older[0], version)
    views_release.show_release_diff(diff)
else:
    st.caption("The first release: nothing to diff against.")
