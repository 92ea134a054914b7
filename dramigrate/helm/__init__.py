"""Helm charts: render (render.py), lint/diff/fix (run.py), map rendered lines back to templates
(locate.py), values keys behind device requests (values.py), rewrite a chart's sources (rewrite.py) with
the render-time migration helper (engine.py, templates/_dramigrate.tpl), and prove a rewrite (prove.py).
"""
