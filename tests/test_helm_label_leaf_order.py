"""The values entry a chart-label-from-values warning names, when the pods' node affinity selects several models
each set by an entry of one values list (cyberun's comfyui: `gpus: [RTX-4090, A100]`): the first entry of the list,
in every run. It was the holder of whichever selected value a Python set gave first, which changes from one process
to the next (string hashing), so two runs of fix named gpus[0] and gpus[1] at random."""

from __future__ import annotations

from dramigrate.helm.labelleaves import label_leaves
from dramigrate.rules import load_rules

MODELS = [f"NVIDIA-Model-{n}" for n in "QWERTYUIOP"]  # ten values: a set's order is the values' order by chance only
STREAM = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: x}}
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              preference:
                matchExpressions:
                  - {{key: nvidia.com/gpu.product, operator: In, values: [{", ".join(reversed(MODELS))}]}}
      containers:
        - name: c
          image: i
          resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def test_the_first_values_entry_is_named_for_a_label_several_entries_set() -> None:
    leaves = label_leaves(STREAM, load_rules(), {"gpus": MODELS})
    leaf = leaves["nvidia.com/gpu.product"]
    assert leaf is not None and leaf.path == ("gpus", 0), leaf
