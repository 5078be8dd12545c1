"""Claims against evidence: each static, migration or cost-model claim about run time, checked by its kind.

  table      CLAIMS: every claim kind, who makes it, the evidence that confirms and refutes it, its check
  evidence   the run per size, the kernel's shape symbols, and the verdicts (annotate, contradict, confirm)
  tail, output, inputs, dtype, cost, unwritten   one module per claim kind (exp and activation ranges:
             review/ranges.py)
  refute     the numbers that refute a claim named as a failure's cause (it is then demoted, never confirmed)

Private to nki_assist.review (the reconcile stage uses it).
"""
