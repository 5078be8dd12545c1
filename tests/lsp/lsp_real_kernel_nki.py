import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_rows(a_tensor, b_tensor):
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    label = "Σ😀"; acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
    t = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        a = nl.load(a_tensor[i * 128:(i + 1) * 128, :])
        t[...] = nl.add(t, a)
    nl.store(out, value=t)
    return out
