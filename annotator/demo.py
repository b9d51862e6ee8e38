"""The demo project: worked examples plus a few hundred generated pairs, judged under two guideline versions.

Built only through the store's functions, once (idempotent), so `qrelkit demo` opens a working project:
agreement is low under the ambiguous v1 guideline (the < 0.6 flag shows) and good under the current one.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from db.accounts.permissions import OPERATOR
from db.accounts.users import create_user
from db.assignment import assign
from db.grading import next_pair, progress, record_judgment
from db.imports import import_fragments, import_queries, import_run
from db.pooling import pool
from db.projects import add_guideline, create_project, list_projects
from db.releases import create_release
from eval_core.progress import bar as progress_bar
from guidelines import DEMO_AMBIGUOUS, DEMO_GRADING

DATA = Path(__file__).resolve().parent / "demo_data"
PROJECT = "demo"
# Demo accounts only: these passwords are printed at start and must never guard real data.
USERS = (("ana", "annotator", "ana-demo"), ("ben", "annotator", "ben-demo"), ("lea", "lead", "lea-demo"))
RUNS = ("baseline", "dense")
MARKUP_QUERY = "zz-markup"
OPEN_QUERIES = 5  # generated queries left open for people trying the demo; the markup query is queued after them
PRODUCTS = (
    "auriculares",
    "portátiles",
    "zapatillas",
    "cafeteras",
    "bicicletas",
    "colchones",
    "relojes",
    "mochilas",
    "lámparas",
    "móviles",
)
# Category names as the worked examples spell theirs (devoluciones, envíos), so each topic is one category.
ASPECTS = {
    "garantías": (
        "¿cuánto dura la garantía de {p}?",
        "Garantía de {p}: {n} años que cubren defectos de fabricación; se tramita con la factura.",
        "La garantía de {p} cubre defectos de fabricación, pero no golpes ni desgaste.",
        "Catálogo de {p}: modelos, colores y opiniones. Más información en la sección de garantía.",
    ),
    "devoluciones": (
        "¿se pueden devolver {p} tras su uso?",
        "Devolución de {p}: se aceptan tras su uso durante {n}0 días si conservan accesorios y embalaje.",
        "Para devolver {p} hay que conservar el embalaje original; el plazo depende del estado.",
        "Guía de compra de {p}: cómo elegir el modelo adecuado. Ver también devoluciones.",
    ),
    "envíos": (
        "¿cuánto tarda el envío de {p}?",
        "Envío de {p}: {n} días laborables desde cualquier almacén, con seguimiento incluido.",
        "Si un paquete de {p} es voluminoso, viaja con transportista especial y el plazo se confirma por correo.",
        "Novedades en {p} esta temporada. Envío y recogida disponibles en toda España.",
    ),
}
# Markup planted in imported fields (query text here; the md-script fragment's title and text; one note): every
# page must show it as typed, and nothing may load from the planted address (port 9 is the discard port).
PLANTED_URL = "http://127.0.0.1:9"
MARKUP_QUERY_TEXT = f'¿cuál es el plazo general de devolución? **urgente** <img src="{PLANTED_URL}/query.png">'
PLANTED_NOTE = f"revisar con *lea* ![nota]({PLANTED_URL}/note.png)"


@dataclass
class DemoInfo:
    """What `qrelkit demo` prints: the project, whether it was built now, and the demo logins."""

    project: str
    created: bool
    users: tuple[tuple[str, str, str], ...] = USERS


def generated(seed: int = 7) -> tuple[list[dict], list[dict], dict[str, dict[str, int]], dict[str, list[list[str]]]]:
    """Queries, fragments, true grades and two runs' rankings for product × aspect questions (300 pairs)."""
    rng = random.Random(seed)
    queries: list[dict] = []
    fragments: list[dict] = []
    truth: dict[str, dict[str, int]] = {}
    for p_i, product in enumerate(PRODUCTS):
        for a_i, (aspect, (question, full, partial, passing)) in enumerate(ASPECTS.items()):
            qid = f"g{p_i * len(ASPECTS) + a_i + 1:02d}"
            queries.append({"id": qid, "text": question.format(p=product), "category": aspect})
            truth[qid] = {}
            for grade, template in ((3, full), (2, partial), (1, passing)):
                fid = f"{qid}-f{grade}"
                fragments.append(
                    {
                        "id": fid,
                        "doc_id": f"doc-{product}",
                        "title": f"{product.capitalize()}: {aspect}",
                        "text": template.format(p=product, n=rng.randint(1, 3)),
                    }
                )
                truth[qid][fid] = grade
    ids = [f["id"] for f in fragments]
    runs: dict[str, list[list[str]]] = {name: [] for name in RUNS}
    for q in queries:
        qid = q["id"]
        distractors = rng.sample([f for f in ids if not f.startswith(qid + "-")], 7)
        for fid in distractors:
            truth[qid][fid] = 0
        good = sorted(truth[qid], key=lambda f: -truth[qid][f])
        runs["dense"].append([qid, *good[:3], *distractors])
        shuffled = good[:3] + distractors
        rng.shuffle(shuffled)
        runs["baseline"].append([qid, *shuffled])
    return queries, fragments, truth, runs


def _jsonl(path: Path) -> list[dict]:
    """Records of one of the demo_data JSONL files."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write records as UTF-8 JSONL for the store's importers."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _write_run(path: Path, seed_run: Path, ranked: list[list[str]], name: str) -> Path:
    """A TREC run: the worked examples' rankings followed by the generated ones (scores strictly decreasing)."""
    lines = [seed_run.read_text(encoding="utf-8")]
    for qid, *docs in ranked:
        lines += [f"{qid} Q0 {d} {i} {len(docs) + 1 - i:.1f} {name}\n" for i, d in enumerate(docs, 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def true_grades() -> dict[str, dict[str, int]]:
    """The grade each demo pair deserves: the worked examples' grades, the generated truth, 0 elsewhere."""
    truth = generated()[2]
    for rec in _jsonl(DATA / "grades.jsonl"):
        truth.setdefault(rec["query_id"], {})[rec["fragment_id"]] = rec["grade"]
    return truth


def noisy(grade: int, annotator: str, ambiguous: bool, rng: random.Random) -> int:
    """Simulated annotator: under the ambiguous guideline ana grades up and ben down across the 1/2/3
    boundaries; under the current one both are right except for rare one-step slips."""
    if ambiguous:
        if annotator == "ana" and grade in (1, 2) and rng.random() < 0.8:
            return grade + 1
        if annotator == "ben" and grade in (2, 3) and rng.random() < 0.7:
            return grade - 1
        if grade == 0 and rng.random() < (0.45 if annotator == "ben" else 0.15):
            return 1
        return grade
    if rng.random() < 0.05:
        return min(3, grade + 1) if grade < 2 else grade - 1
    return grade


def judge(
    engine: Engine,
    username: str,
    count: int,
    truth: dict[str, dict[str, int]],
    ambiguous: bool,
    rng: random.Random,
    bar: Any,
    stop: str,
) -> int:
    """Grade up to `count` pairs from the head of the user's queue, stopping at query `stop`."""
    done = 0
    while done < count:
        view = next_pair(engine, PROJECT, username)
        if view is None or view.query_external_id == stop:
            break
        grade = noisy(truth.get(view.query_external_id, {}).get(view.fragment_external_id, 0), username, ambiguous, rng)
        note = "borderline between 1 and 2" if ambiguous and grade in (1, 2) and rng.random() < 0.1 else None
        if done == 0 and not ambiguous:
            note = PLANTED_NOTE
        record_judgment(engine, view.pair_id, username, grade, note=note, seconds_spent=rng.uniform(3, 25))
        bar.update()
        done += 1
    return done


def first_open_query() -> str:
    """The generated query the demo leaves open first: what an annotator trying the demo sees."""
    queries = generated()[0]
    return queries[len(queries) - OPEN_QUERIES]["id"]


def pairs_before(engine: Engine, username: str, stop: str) -> int:
    """How many pairs precede query `stop` in the user's queue (these get the simulated grades)."""
    total = 0
    for query, _done, assigned in progress(engine, PROJECT, username).per_query:
        if query == stop:
            break
        total += assigned
    return total


def demo_files(folder: Path) -> Iterator[tuple[str, Path]]:
    """Write the import files (worked examples + generated data + the markup fragment, queued last) into `folder`."""
    queries, fragments, _, runs = generated()
    markup = {"id": MARKUP_QUERY, "text": MARKUP_QUERY_TEXT, "category": "devoluciones"}
    queries = [*_jsonl(DATA / "queries.jsonl"), *queries, markup]
    fragments = [*_jsonl(DATA / "fragments.jsonl"), *fragments]
    yield "queries", _write_jsonl(folder / "queries.jsonl", queries)
    yield "fragments", _write_jsonl(folder / "fragments.jsonl", fragments)
    for name in RUNS:
        ranked = [*runs[name], [MARKUP_QUERY, "md-script", "d3", "d13"]]
        yield name, _write_run(folder / f"{name}.run", DATA / f"{name}.run", ranked, name)


def build_demo(engine: Engine, show_progress: bool = False) -> DemoInfo:
    """Create the demo project once; later calls only report it. Both annotators' queues are graded up to
    the first open generated query (the pair a newcomer sees first; the query whose fragment holds <script>
    and Markdown comes last in the queue); the first half is graded under the ambiguous v1 guideline, the
    rest under the current one. Release 1 is made from those grades, so Evaluate has content at once."""
    if any(p.name == PROJECT for p in list_projects(engine)):
        return DemoInfo(PROJECT, created=False)
    for username, role, password in USERS:
        create_user(engine, username, role, password, actor=OPERATOR)
    create_project(engine, PROJECT, scale=(0, 3), overlap=2, actor="lea")
    add_guideline(engine, PROJECT, DEMO_AMBIGUOUS.read_text(encoding="utf-8"), actor="lea")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in demo_files(Path(tmp)):
            if kind == "queries":
                import_queries(engine, PROJECT, path, actor="lea")
            elif kind == "fragments":
                import_fragments(engine, PROJECT, path, actor="lea")
            else:
                import_run(engine, PROJECT, path, name=kind, actor="lea")
    pool(engine, PROJECT, depth=20, actor="lea")
    assign(engine, PROJECT, overlap=2, annotators=["ana", "ben"], actor="lea")
    truth, rng, stop = true_grades(), random.Random(11), first_open_query()
    todo = {username: pairs_before(engine, username, stop) for username in ("ana", "ben")}
    with progress_bar(total=sum(todo.values()), desc="demo judgments", unit="grade", show=show_progress) as bar:
        for username, count in todo.items():
            judge(engine, username, count // 2, truth, ambiguous=True, rng=rng, bar=bar, stop=stop)
        add_guideline(engine, PROJECT, DEMO_GRADING.read_text(encoding="utf-8"), actor="lea")
        for username, count in todo.items():
            judge(engine, username, count - count // 2, truth, ambiguous=False, rng=rng, bar=bar, stop=stop)
    create_release(engine, PROJECT, rule="median", actor="lea")
    return DemoInfo(PROJECT, created=True)
