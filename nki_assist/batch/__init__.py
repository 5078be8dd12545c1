"""Batch review: many submissions, one results table (docs/batch.md).

manifest (what to review) -> template (one spec applied to many submitted files) -> store (results table,
resume keys) -> task (one review, rendered) -> pool / ray_runner (where tasks run) -> engine (the loop) ->
report (across submissions).
"""
