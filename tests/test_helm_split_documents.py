"""Splitting a template's output into documents as Helm does (releaseutil.SplitManifests): render.split_documents
finds the separators by hand, for speed; Helm's own regex, run by Python's re, is the reference."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from dramigrate.helm.render import RenderOptions, render_chart, split_documents

HELM_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")  # `(?:^|\s*\n)---\s*`, Go's \s spelled out

PIECES = st.sampled_from(["---", "-", "\n", "\n---", " ", "\t", "\r", "\f", "\v", "a: b", "#", "--- x"])


@given(st.lists(PIECES, max_size=16).map("".join))
def test_split_documents_splits_as_helms_separator(text: str) -> None:
    assert split_documents(text) == HELM_SEPARATOR.split(text)


def test_a_template_with_separators_and_blanks_renders_its_documents_as_helm(tmp_path) -> None:
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "many.yaml").write_text(
        "---\nkind: ConfigMap\nmetadata:\n  name: a\n  \t\n---  \n\nkind: Secret\nmetadata:\n  name: b\n"
        "data:\n  x: |\n    ---not a separator\n   \n---\r\n  kind: Service\nmetadata:\n  name: c\n"
    )
    rendered = render_chart(chart, RenderOptions())
    assert [m.text for m in rendered] == [
        "kind: Secret\nmetadata:\n  name: b\ndata:\n  x: |\n    ---not a separator\n",
        "kind: ConfigMap\nmetadata:\n  name: a\n",
        "kind: Service\nmetadata:\n  name: c\n",
    ]
