"""Metadata of the rules whose checks run above the rules layer (the registry cannot import them there).

Families and id ranges (ids are stable, never reused):
  NA1xx          tool-level rules (unused suppression, ...)      specs/general.py
  SIM1xx         simulator violations                            specs/sim.py
  NUM1xx         numerical attributions                          specs/numerics.py
  PERF1xx        cost-model findings, PROF1xx profile findings   specs/perf.py
  TC1xx          toolchain and sandbox                           specs/toolchain.py
  DIAG1xx        diagnoses of failing sizes (nki_assist/diagnose) specs/diagnosis.py
The static families list their specs beside their checks: NKI0xx-NKI5xx in rules/nki/, CUDA1xx in
rules/cuda/, MIG1xx in rules/migration/.
"""
