"""Details of the chart rewrite's proof (issue 7 item 3): charts that render random values, templates that end
in a block scalar, counts capped in the template. Each case is one real fix of a small chart (the Helm engine
embedded in helm-python-sdk), so each test is a second or two.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from test_helm_idiomatic import DEPLOYMENT, RULES, T136, VALUES, docs, write_chart

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes

SECRET = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\ndata:\n  token: {{ randAlphaNum 24 | b64enc }}\n"


def test_random_values_are_masked_not_a_failed_proof(tmp_path: Path) -> None:
    """A token from randAlphaNum in the GPU pod and a Secret: two renders of the original already differ
    there, so the proof compares everything else (switch off byte-identical, switch on equal to the migration)."""
    env = "          env:\n            - name: TOKEN\n              value: {{ randAlphaNum 16 | quote }}\n"
    chart = write_chart(tmp_path, DEPLOYMENT.replace("          resources:\n", env + "          resources:\n"))
    (chart / "templates" / "secret.yaml").write_text(SECRET)
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert outcome.checked[:2] == ["default values", "numGpus changed to 2"]
    write_changes(outcome)
    (pod,) = [d["spec"]["template"]["spec"] for d in docs(chart) if d["kind"] == "Deployment"]
    assert pod["resourceClaims"] and len(pod["containers"][0]["env"][0]["value"]) == 16


def test_template_ending_in_a_block_scalar_keeps_its_final_newline(tmp_path: Path) -> None:
    """`args: [|\\n echo hi]` as the template's last lines: the value is "echo hi\\n". The generated engine
    (`--chart-style engine`) wraps the template in a define; its end must not trim that newline away."""
    chart = write_chart(tmp_path, DEPLOYMENT + "          args:\n            - |\n              echo hi\n")
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(chart_style="engine"), T136, "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    out = [d for m in render_chart(chart, RenderOptions()) for d in yaml.safe_load_all(m.text) if d]
    (pod,) = [d["spec"]["template"]["spec"] for d in out if d["kind"] == "Deployment"]
    assert pod["containers"][0]["args"] == ["echo hi\n"] and pod["resourceClaims"]


def test_capped_count_is_proven_with_a_count_the_render_shows(tmp_path: Path) -> None:
    """`min .Values.numGpus 8` at 8: one more renders the same 8 GPUs, so the proof changes the count one down."""
    capped = DEPLOYMENT.replace("{{ .Values.numGpus }}", "{{ min .Values.numGpus 8 }}")
    chart = write_chart(tmp_path, capped, VALUES.replace("numGpus: 1", "numGpus: 8"))
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    assert "numGpus changed to 7" in outcome.checked and "numGpus switched off with 0" in outcome.checked
    write_changes(outcome)
    for count, expected in ((7, 7), (12, 8)):
        (rct,) = [d for d in docs(chart, f"numGpus={count}") if d["kind"] == "ResourceClaimTemplate"]
        assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == expected


def test_a_random_name_of_digits_is_masked_in_names_not_in_numbers() -> None:
    """Objects named with a random part of digits (`job-{{ randNumeric 3 }}`) are paired by the rest of the name; the
    mask went through the objects' JSON text, so a port 8482 around the digits 482 broke it (an internal error
    instead of a proof) and masked the same digits of other numbers on both sides (a real difference hidden)."""
    from dramigrate.helm.prove import first_difference, objects, volatile

    job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: job-{n}\nspec:\n  port: {port}\n"
    one, two = objects(job.format(n=482, port=8482)), objects(job.format(n=917, port=8482))
    ignore = volatile(one, two)

    assert first_difference(one, two, ignore) == ""
    assert "8483" in first_difference(one, objects(job.format(n=917, port=8483)), ignore)


def test_a_pod_whose_tolerations_a_helper_writes_gets_the_toleration_in_that_list(tmp_path: Path) -> None:
    """The pod's tolerations written by a helper (`include "app.scheduling"`), the values list empty: the DRA
    branch's own `tolerations:` once came out as a second key of the pod (Helm keeps the last; strict readers refuse
    the render), which made the chart manual work. The rewrite now appends the device toleration to the list the
    helper writes, at the call's line (calltolerations), so the pod keeps one key and the rewrite is proven; a key
    the rewritten render repeats is still refused (test_helm_idiomatic and
    test_helm_passthrough_define_pod_tolerations)."""
    own = DEPLOYMENT[DEPLOYMENT.index("      {{- with .Values.tolerations }}") : DEPLOYMENT.index("      containers:")]
    chart = write_chart(tmp_path, DEPLOYMENT.replace(own, '      {{- include "app.scheduling" . | nindent 6 }}\n'))
    helper = "tolerations:\n  {{- toYaml .Values.tolerations | nindent 2 }}"
    (chart / "templates" / "_scheduling.tpl").write_text(
        f'{{{{- define "app.scheduling" -}}}}\n{helper}\n{{{{- end }}}}\n'
    )
    outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "fix")
    assert outcome.proven, outcome.report()
    # the call's line reads the helper's output back and appends the device toleration to its list
    assert any("fromYaml" in change.after for change in outcome.changes), outcome.diff()
