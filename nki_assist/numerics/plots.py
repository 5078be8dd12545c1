"""Error vs size per scenario (PNG) for the markdown/HTML report."""

from __future__ import annotations

import io

from .scenarios import NumericsResult


def error_plot(res: NumericsResult) -> bytes | None:
    """Max abs error of each scenario vs the reference, per size; None when nothing was compared."""
    series: dict[str, list[tuple[str, float]]] = {}
    for sr in res.sizes:
        for (scenario, against), ags in sr.agreements.items():
            if against != "reference":
                continue
            vals = [a.mean_abs for a in ags if a is not None]
            if vals:
                series.setdefault(scenario, []).append((sr.size, max(max(vals), 1e-30)))
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [sr.size + (f"\n{res.reduction_symbol}={sr.reduction_length}" if sr.reduction_length else "")
              for sr in res.sizes]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    for scenario, pts in series.items():
        xs = [labels[[s.size for s in res.sizes].index(name)] for name, _ in pts]
        ax.plot(xs, [v for _, v in pts], marker="o", label=scenario)
    ax.set_yscale("log")
    ax.set_ylabel("mean abs error vs reference")
    ax.set_title("Numerical error per size and scenario")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
