# Re-implementation of sr_oracle.h's normative functions, from the header text only.
M = (1 << 64) - 1
G = 0x9E3779B97F4A7C15
def mix(z):
    z &= M
    z ^= z >> 30; z = (z * 0xBF58476D1CE4E5B9) & M
    z ^= z >> 27; z = (z * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
def draw(s, k): return mix((s + G * (k + 1)) & M)
def unit(x): return (x >> 11) * 2.0**-53
def below(x, n): return (x * n) >> 64
def h_empty(seed): return mix(seed ^ 0x7072656669786831)
def push(h, t): return mix(h ^ mix((t + G) & M))
def route_row(h, fp, g, E, K):
    s = mix((mix(h ^ fp) + G * (g + 1)) & M)
    a = {}
    out = []
    for j in range(K):
        r = j + below(draw(s, j), E - j)
        aj, ar = a.get(j, j), a.get(r, r)
        a[j], a[r] = ar, aj
        out.append(a[j])
    return out
def nxt(h, F, vocab, eos_id, eos_rate, scale, nfr):
    z = mix(h ^ F ^ 0x6E657874746F6B31)
    u = [draw(z, k) for k in range(4)]
    is_eos = eos_id >= 0 and unit(u[0]) < eos_rate
    if is_eos: t = eos_id
    elif eos_id < 0: t = below(u[1], vocab)
    else:
        t = below(u[1], vocab - 1)
        if t >= eos_id: t += 1
    lp = 0.0 - scale * unit(u[2])
    if unit(u[3]) < nfr:
        lp = [float('nan'), float('inf'), float('-inf')][u[3] % 3]
    return t, lp
def generate(seed, vocab, layers, E, K, eos_id, eos_rate, stops, scale, nfr, F, fps, prompt, max_tokens, start):
    h = h_empty(seed)
    for t in prompt: h = push(h, t)
    gen, lps = [], []
    finish = 'length'
    while True:
        t, lp = nxt(h, F, vocab, eos_id, eos_rate, scale, nfr)
        gen.append(t); lps.append(lp)
        if t == eos_id: finish = 'stop'; break
        if any(len(s) <= len(gen) and gen[-len(s):] == s for s in stops): finish = 'stop'; break
        if len(gen) == max_tokens: break
        h = push(h, t)
    seq = prompt + gen
    rows = []
    h = h_empty(seed)
    for i in range(len(seq) - 1):
        h = push(h, seq[i])
        if i >= start:
            rows.append([route_row(h, fps[l], g, E, K) for l, g in enumerate(layers)])
    return gen, lps, finish, rows
