"""Helm charts: render (render.py, in a sandboxed child: sandbox.py), lint/diff/fix (run.py), map rendered lines
back to templates (locate.py), values keys behind device requests (values.py), and prove a rewrite (prove.py).
A chart run's options and outcome, and the render comparisons every proof shares, are in outcome.py; the proofs of
the idiomatic rewrites are proveswitch.py (behind the `dra.enabled` switch) and passthroughproof.py (the
pass-through); ownswitch.py uses a chart's own DRA switch.

The idiomatic rewrites (the default `--chart-style idiomatic`), by how a device request reaches the pod
(patterns.py names the pattern): idiomatic.py for a literal key with a values count (A) and the dispatch of the
others, passthrough.py for a values resources map passed through (B/C), helper.py for a named helper (D),
keyedmap.py and twinnames.py for a resource name from values (E), mapvars.py for maps built in variables, nested.py
and listed.py for containers in ranges and values lists. What they share: templatelines.py (a template read as
lines), goexpr.py (Go template expressions), model.py (the data), poddelta.py (what the manifest migration adds to
each pod), tolerationedits.py (the DRA tolerations in the pod's own list), conventions.py (Chart.yaml, values
schema). The injected engine (`--chart-style engine`): rewrite.py with engine.py and templates/_dramigrate.tpl.
"""
