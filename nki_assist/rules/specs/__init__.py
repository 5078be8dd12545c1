"""Rule metadata, one module per family. Pure data: importing these never pulls in checks.

Families and id ranges (ids are stable, never reused):
  NKI0xx-NKI5xx  static NKI rules (parse/nki + rules/nki_*)     specs/nki.py
  CUDA1xx        static CUDA rules                               specs/cuda.py
  NA1xx          tool-level rules (unused suppression, ...)      specs/general.py
  SIM1xx         simulator violations                            specs/sim.py
  MIG1xx         CUDA-vs-NKI migration checks                    specs/migration.py
  NUM1xx         numerical attributions                          specs/numerics.py
  PERF1xx        cost-model findings, PROF1xx profile findings   specs/perf.py
  DIAG1xx        diagnoses of failing sizes (nki_assist/diagnose) specs/diagnosis.py
"""
