# ---------------------------------------------------------------------------------------------
# Fusion: a run of consecutive elementwise steps of a Program (replay.pxi) over same-sized
# contiguous float buffers, run as one loop over blocks of a few thousand elements instead of
# one pass over the whole buffers per step.
#
# What a group may hold: binary + - * / (and ** with a number exponent) whose operands are
# numbers, one-element slots or slots of the result's shape, and the unary C steps whose replay
# backward is a formula of C kernels (neg exp log tanh relu sigmoid sin cos).  Each block runs
# every step of the group in order, with the same kernel functions eager calls, on the block's
# elements: kernels.h guarantees that element i of a result depends on element i of the operands
# only, so a block's values are bit for bit those of the whole-buffer call.  The backward walks
# the group's steps in reverse for each block, with the formulas of Program.backward_step and
# the same accumulation order per element (a slot's first contribution copied, later ones added
# in the sweep's order), so gradients are bit-identical too.
#
# Memory: a value that nothing outside the group reads (not an output, not a value Python read,
# not an operand of a step outside the group) and that the backward does not read lives only in
# a block-sized row, reused once its last reader in the group has run; likewise the adjoint of a
# value whose only readers are in the group.
# A sin (cos) whose input gets a gradient computes the cos (sin) its backward needs in the same
# pass (tg_sincos: one argument reduction for both, the same bits as the cos / sin kernel) into a
# partner: its backward reads that instead of running a second transcendental kernel (in a chain
# of sin, tanh and the like at 1e6 elements, cos was a fifth of the replay's time).
#
# The values the backward reads (a tanh's output, a product's operands, the partners) are kept
# one of two ways, which the planner (form_groups) picks per group:
# - saved: at full size, as eager keeps them, written by the forward and read back block by block
#   by the backward.  For a small group they stay in cache and this is the fastest way.
# - recomputed: when they would take more than the program's recompute_bytes
#   (FUSE_RECOMPUTE_BYTES), the forward keeps none of them (nor the partners: it runs plain
#   sin / cos) and copies the group's inputs instead (those a caller can reach or a re-run op
#   made: a later in-place write must not change what the backward sees; eager raises for the
#   writes it would see, by the version checks of the recorded call, unchanged); the backward
#   runs each block's forward steps again, from the copies, into block rows of its own (every
#   value of the group, so it reads no member at full size), then the VJPs over the block.  Same
#   kernels on the same operands give the same bits, so results stay eager's.  Past the caches
#   the backward's reads of the saved values (a stream per value: hundreds in a long chain) cost
#   more than computing them again: the 300-op bench chain at 1e6 elements spent ~290 ms saving
#   and reading 1.6 GB, against ~215 ms recomputing.
# A contribution to a one-element slot (a parameter broadcast over the group) is written at full
# size and summed after the loop, by the same summation eager uses (give_full), in the sweep's
# order.
# ---------------------------------------------------------------------------------------------

cdef inline bint fusable_unary(Step* s) noexcept:
    if s.op == OP_NEG or s.op == OP_EXP or s.op == OP_LOG or s.op == OP_TANH or s.op == OP_RELU:
        return True
    return s.kop == TG_SIGMOID or s.kop == TG_SIN or s.kop == TG_COS


cdef bint fusable_step(Program p, Step* s) except -1:
    """Whether step s can join a fused group (see the top of this file)."""
    if s.n < FUSE_MIN_N:
        return False
    if s.kind == SK_UNARY:
        return fusable_unary(s) and p.sizes[s.a] == s.n
    if s.kind != SK_BINARY or s.cols != 0:
        return False
    if not (s.kop == TG_ADD or s.kop == TG_SUB or s.kop == TG_MUL or s.kop == TG_DIV
            or (s.kop == TG_POW and s.b < 0)):
        return False
    for k, stride in ((s.a, s.stride_a), (s.b, s.stride_b)):
        if k >= 0 and not ((stride == 1 and p.sizes[k] == s.n)
                           or (stride == 0 and p.sizes[k] == 1)):
            return False
    return True


cdef list step_reads(Program p, Py_ssize_t i):
    """The slots step i reads in its forward."""
    cdef Step* s = &p.steps[i]
    if s.kind == SK_CALL:
        return list(p.aux[i][3])
    if s.kind == SK_OP:
        return [k for k in p.aux[i][0] if k >= 0]
    return [k for k in (s.a, s.b) if k >= 0]


cdef list backward_reads(Program p, Step* s):
    """The slots a fused step's backward reads (their values, at full size)."""
    cdef list out = []
    if s.kind == SK_BINARY:
        if s.kop == TG_MUL:
            if s.grad_a and s.b >= 0:
                out.append(s.b)
            if s.grad_b and s.a >= 0:
                out.append(s.a)
        elif s.kop == TG_DIV:
            if s.grad_a and s.b >= 0:
                out.append(s.b)
            if s.grad_b:
                if s.a >= 0:
                    out.append(s.a)
                out.append(s.b)
        elif s.kop == TG_POW and s.grad_a:
            out.append(s.a)
    elif s.grad_a and s.op != OP_NEG and s.partner < 0:     # (sin, cos: their partner)
        if s.op == OP_LOG:
            out.append(s.a)
        else:
            out.append(s.out)           # exp, tanh, relu, sigmoid: their output
    return out


cdef int value_rows(Program p, Py_ssize_t first, Py_ssize_t last, set members, set full,
                    set pinned, int* rowmap) except -1:
    """Lay out the value rows of steps first .. last's block in rowmap; returns how many rows.
    A member in `full` keeps its full-size buffer (-1); one in `pinned`, or read by no step of
    the group, has a row of its own; the others share rows, a row taken again once its value's
    last reader in the group has run."""
    cdef Py_ssize_t i, k, n_rows = 0
    cdef dict last_use = {}
    cdef list free = []
    for i in range(first, last + 1):
        for k in step_reads(p, i):
            last_use[k] = i
    for i in range(first, last + 1):
        k = p.steps[i].out
        if k not in full:
            if free and k in last_use and k not in pinned:
                rowmap[k] = free.pop()
            else:
                rowmap[k] = n_rows
                n_rows += 1
        for k in set(step_reads(p, i)):
            if k in members and rowmap[k] >= 0 and last_use[k] == i and k not in pinned:
                free.append(rowmap[k])
    return n_rows


cdef inline Py_ssize_t block_for(Py_ssize_t rows, Py_ssize_t item, Py_ssize_t n,
                                 Py_ssize_t budget) noexcept:
    """Elements per block when a block has `rows` rows: they fit in `budget` bytes."""
    cdef Py_ssize_t block = (budget // item) // max(rows, 1)
    block = max(FUSE_MIN_BLOCK, min(FUSE_MAX_BLOCK, block)) // 64 * 64
    return block if block < n else n


cdef int form_groups(Program p, object observed) except -1:
    """Find the fused groups of p's steps, decide which recompute in their backward, and lay out
    their rows (sets p.groups, p.vrow, p.arow, p.prow, p.copy_slots,
    p.steps[i].group / bc_a / bc_b / partner).  `observed`: slots Python reads (value
    guards)."""
    cdef Py_ssize_t i, j, n = p.n_steps, k, g
    cdef Step* s
    cdef list spans = []
    for i in range(n):
        p.steps[i].group = -1
        p.steps[i].bc_a = p.steps[i].bc_b = p.steps[i].partner = -1
    p.n_partner = 0
    for k in range(p.n_slots):
        p.vrow[k] = p.arow[k] = -1
    i = 0
    while i < n:
        if not fusable_step(p, &p.steps[i]):
            i += 1
            continue
        j = i
        while j + 1 < n and p.steps[j + 1].n == p.steps[i].n and fusable_step(p, &p.steps[j + 1]):
            j += 1
        if j > i:
            spans.append((i, j))
        i = j + 1
    if not spans:
        return 0
    p.groups = <FuseGroup*>calloc(len(spans), sizeof(FuseGroup))
    if p.groups == NULL:
        raise MemoryError()
    for first, last in spans:
        for i in range(first, last + 1):
            s = &p.steps[i]
            if s.kind == SK_UNARY and (s.kop == TG_SIN or s.kop == TG_COS) and s.grad_a:
                s.partner = p.n_partner
                p.n_partner += 1
    p.prow = <int*>malloc(max(p.n_partner, 1) * sizeof(int))
    if p.prow == NULL:
        raise MemoryError()
    for k in range(p.n_partner):
        p.prow[k] = -1
    cdef bint any_grad = any(p.grad)
    cdef set seen = set(p.outputs) | set(observed)
    cdef Py_ssize_t item = 8 if p.f64 else 4
    cdef Py_ssize_t n_vrows, n_brows, n_arows, n_partners
    cdef bint recompute
    cdef FuseGroup* G
    for g, (first, last) in enumerate(spans):
        G = &p.groups[g]
        # what is read outside the group: the outputs, the guards, other steps' operands
        members = {p.steps[i].out for i in range(first, last + 1)}
        outside = set(seen)
        read_inside = set()
        for i in range(n):
            if i < first or i > last:
                outside.update(step_reads(p, i))
            else:
                read_inside.update(step_reads(p, i))
        escaping = members & outside
        unread = members - read_inside     # (cannot be, pruned: kept at full size)
        saved = set()                      # members the backward reads
        n_partners = 0
        if any_grad:
            for i in range(first, last + 1):
                saved.update(k for k in backward_reads(p, &p.steps[i]) if k in members)
                if p.steps[i].partner >= 0:
                    n_partners += 1
        # The planner: a group whose backward would read more saved bytes than
        # p.recompute_bytes (past the caches, where writing them in the forward and reading
        # them back costs about what computing them again does) recomputes them in its
        # backward, block by block, from copies of its inputs taken by its forward.
        recompute = (p.recompute_bytes >= 0 and (len(saved - escaping) + n_partners)
                     * p.steps[first].n * item > p.recompute_bytes)
        n_vrows = value_rows(p, first, last, members,
                             escaping | unread | (set() if recompute else saved), set(), p.vrow)
        if recompute:
            # the backward's rows: every member (none read at full size, which the caller
            # may have written to), the ones the VJPs read pinned; then the partners.  Its own
            # map: a member of this group may be another group's input, read at full size there
            G.brow = <int*>malloc(max(p.n_slots, 1) * sizeof(int))
            if G.brow == NULL:
                raise MemoryError()
            for k in range(p.n_slots):
                G.brow[k] = -1
            n_brows = value_rows(p, first, last, members, set(), saved, G.brow)
            for i in range(first, last + 1):
                if p.steps[i].partner >= 0:
                    p.prow[p.steps[i].partner] = n_brows
                    n_brows += 1
        else:
            n_brows = n_vrows
        # adjoint rows (reverse order): a member no step outside the group reads gets its
        # gradient from the group only, in a row from its last reader's step to its own
        # An operand of + (either) or - (the first) whose first contribution this is takes
        # over the row of the step's own adjoint, dead after the step: its contribution, the
        # adjoint unchanged, is then already in place (no copy per block)
        free, n_arows = [], 0
        bc = []
        for i in range(last, first - 1, -1):
            s = &p.steps[i]
            handed_on = False
            for k, want in ((s.a, s.grad_a), (s.b, s.grad_b and not (s.kind == SK_UNARY or
                                                                     s.kop == TG_POW))):
                if k < 0 or not want:
                    continue
                if k in members and k not in escaping and p.arow[k] < 0:
                    if (not handed_on and p.arow[s.out] >= 0 and s.kind == SK_BINARY
                            and (s.kop == TG_ADD or (s.kop == TG_SUB and k == s.a))):
                        p.arow[k] = p.arow[s.out]
                        handed_on = True
                    elif free:
                        p.arow[k] = free.pop()
                    else:
                        p.arow[k] = n_arows
                        n_arows += 1
            if p.arow[s.out] >= 0 and not handed_on:
                free.append(p.arow[s.out])
            # the one-element slots' contributions, in the sweep's order (a, then b)
            if s.grad_a and s.a >= 0 and p.sizes[s.a] == 1:
                s.bc_a = len(bc) + p.n_bc
                bc.append((s.a, s.out))
            if (s.grad_b and s.b >= 0 and p.sizes[s.b] == 1 and s.kind == SK_BINARY
                    and s.kop != TG_POW):
                s.bc_b = len(bc) + p.n_bc
                bc.append((s.b, s.out))
        # arow values so far count adjoint rows from 0: move them after the backward's value rows
        for k in members:
            if p.arow[k] >= 0:
                p.arow[k] += n_brows
        G.first, G.last, G.n = first, last, p.steps[first].n
        G.recompute = recompute
        G.bscratch = n_brows + n_arows
        G.bblock = block_for(G.bscratch + 2, item, G.n,
                             FUSE_RECOMPUTE_ROW_BYTES if recompute else FUSE_ROW_BYTES)
        if recompute:                   # the forward's rows: its values only
            G.n_rows = n_vrows
            G.scratch = -1
            G.block = block_for(n_vrows, item, G.n, FUSE_ROW_BYTES)
            G.copy_base = len(p.copy_slots)
            # the inputs the backward reads again: copied by the forward unless the set owns
            # their buffers (a value the caller can reach or a re-run op made may change)
            p.copy_slots.extend(sorted(k for k in read_inside - members
                                       if k < p.n_ext or k in p.fresh))
            G.n_copies = len(p.copy_slots) - G.copy_base
        else:
            G.n_rows = G.bscratch + 2
            G.scratch = G.bscratch
            G.block = G.bblock
            G.copy_base = G.n_copies = 0
        p.rows_bytes = max(p.rows_bytes, G.n_rows * G.block * item,
                           (G.bscratch + 2) * G.bblock * item)
        G.n_bc = len(bc)
        G.bc_base = p.n_bc
        p.n_bc += len(bc)
        p.bc_slots.extend(bc)
        for i in range(first, last + 1):
            p.steps[i].group = g
        p.group_writes.append(sorted(
            {k for i in range(first, last + 1) for k, want in (
                (p.steps[i].a, p.steps[i].grad_a), (p.steps[i].b, p.steps[i].grad_b))
             if want and k >= 0 and p.arow[k] < 0 and p.sizes[k] != 1}))
    p.n_groups = len(spans)
    return 0


# -- running a group: lanes over the thread pool -------------------------------------------------
# A group's blocks are independent of each other (element i of every result depends on element i
# of the operands only; the backward's per-block state, which adjoints hold a value, is the same
# for every block), so big groups split their blocks over the core's thread pool: lane j of L
# runs blocks [j * nb / L, (j + 1) * nb / L) with its own block rows, `touched` flags and
# written-flags of the one-element contributions.  Every block computes exactly what it computes
# alone, and the contributions to one-element slots are summed after the loop, in one thread, in
# the sweep's order: results do not depend on the number of threads.  The lanes read only this C
# state (no Python object is touched without the GIL).

cdef enum:
    FUSE_PARALLEL_MIN = 16384   # elements of a group below which it runs in the calling thread
                                # (the threshold of the pooled transcendental kernels)


cdef struct FusedRun:
    Step* steps
    FuseGroup* G
    int* vrow                   # the value rows: Program.vrow, or the group's brow in a
                                # recomputing backward
    int* arow
    int* prow
    bint partners               # sin / cos steps fill their partners (not in a recomputing
                                # group's forward: its backward computes them)
    void** ptr                  # slot -> data (a recomputing backward: its inputs' copies)
    void** aptr
    void** bcp
    void** pptr
    bint f64
    Py_ssize_t item
    Py_ssize_t n_slots
    Py_ssize_t n_bc             # the program's contributions to one-element slots (all groups)
    Py_ssize_t block            # elements per block of this run
    Py_ssize_t row_len          # bytes of one row of this run
    int scratch_row
    Py_ssize_t n_blocks
    Py_ssize_t n_lanes
    char* rows                  # lane j's rows at rows + j * lane_rows
    Py_ssize_t lane_rows
    char* touched               # lane j's flags at touched + j * n_slots (backward)
    const char* touched0        # the flags before the group's backward
    char* bcw                   # lane j's written-flags at bcw + j * n_bc (backward)


cdef struct Lane:
    FusedRun* r
    char* rowp
    char* touched
    char* bcw


cdef inline char* value_at(Lane* L, Py_ssize_t k, Py_ssize_t o) noexcept nogil:
    """Slot k's values of the block starting at element o: its row, or its full buffer."""
    cdef FusedRun* r = L.r
    if r.vrow[k] >= 0:
        return L.rowp + r.vrow[k] * r.row_len
    return <char*>r.ptr[k] + o * r.item


cdef inline const void* operand_at(Lane* L, Step* s, bint second, Py_ssize_t o,
                                   Py_ssize_t* stride) noexcept nogil:
    """A binary step's operand a (or b) for the block at o, and its element stride."""
    cdef Py_ssize_t k = s.b if second else s.a
    cdef Py_ssize_t st = s.stride_b if second else s.stride_a
    if k < 0:
        stride[0] = 0
        if second:
            return <void*>&s.cb if L.r.f64 else <void*>&s.fb
        return <void*>&s.ca if L.r.f64 else <void*>&s.fa
    if st == 0:
        stride[0] = 0
        return L.r.ptr[k]
    stride[0] = 1
    return value_at(L, k, o)


cdef inline char* partner_at(Lane* L, Step* s, Py_ssize_t o) noexcept nogil:
    """The block at o of step s's partner (the cos of a sin's input, the sin of a cos's): its
    row in a recomputing backward, else its full-size buffer."""
    cdef FusedRun* r = L.r
    if r.prow[s.partner] >= 0:
        return L.rowp + r.prow[s.partner] * r.row_len
    return <char*>r.pptr[s.partner] + o * r.item


cdef inline void k_sincos(bint f64, Py_ssize_t n, const void* x, void* sin_out,
                          void* cos_out) noexcept nogil:
    if f64:
        pooled_sincos_f64(n, <const double*>x, <double*>sin_out, <double*>cos_out)
    else:
        pooled_sincos_f32(n, <const float*>x, <float*>sin_out, <float*>cos_out)


cdef inline void lane_at(FusedRun* r, Py_ssize_t j, Lane* L) noexcept nogil:
    L.r = r
    L.rowp = r.rows + j * r.lane_rows
    L.touched = r.touched + j * r.n_slots
    L.bcw = r.bcw + j * r.n_bc


cdef inline void lane_blocks(FusedRun* r, Py_ssize_t j, Py_ssize_t* b0, Py_ssize_t* b1) noexcept nogil:
    b0[0] = j * r.n_blocks // r.n_lanes
    b1[0] = (j + 1) * r.n_blocks // r.n_lanes


cdef int prepare_run(Program p, BufferSet bs, FuseGroup* G, FusedRun* r,
                     bint backward) except -1:
    """r for group G's forward or backward: its lanes (one per pool thread when G is big
    enough, else one) and their scratch, allocated in bs once and grown when the thread count
    grows."""
    cdef Py_ssize_t lanes = 1, threads = pooled_threads()
    cdef bint recomputing = backward and G.recompute
    r.steps = p.steps
    r.G = G
    r.vrow = G.brow if recomputing else p.vrow
    r.arow, r.prow = p.arow, p.prow
    r.partners = backward or not G.recompute
    r.ptr, r.aptr, r.bcp, r.pptr = bs.ptr, bs.aptr, bs.bcp, bs.pptr
    r.f64, r.item = p.f64, p.item
    r.n_slots, r.n_bc = p.n_slots, max(p.n_bc, 1)
    r.block = G.bblock if backward else G.block
    r.row_len = r.block * p.item
    r.scratch_row = G.bscratch if backward else G.scratch
    r.n_blocks = (G.n + r.block - 1) // r.block
    if threads > 1 and G.n >= FUSE_PARALLEL_MIN:
        lanes = min(threads, r.n_blocks)
    r.n_lanes = lanes
    if lanes > bs.n_lanes:
        bs.rows = np.empty(p.rows_bytes * lanes, np.uint8)
        bs.rowp = <char*>cnp.PyArray_DATA(<cnp.ndarray>bs.rows)
        free(bs.lane_touched)
        free(bs.lane_bcw)
        bs.lane_touched = <char*>calloc(p.n_slots * lanes, 1)
        bs.lane_bcw = <char*>calloc(r.n_bc * lanes, 1)
        if bs.lane_touched == NULL or bs.lane_bcw == NULL:
            bs.n_lanes = 0
            raise MemoryError()
        bs.n_lanes = lanes
    r.rows = bs.rowp
    r.lane_rows = p.rows_bytes
    r.touched = bs.lane_touched
    r.touched0 = bs.touched
    r.bcw = bs.lane_bcw
    return 0


cdef inline void run_lanes(FusedRun* r, tg_range_fn fn) noexcept:
    """fn over lanes 0 .. n_lanes - 1: over the pool when there are several (each lane one
    index of the range, so the pool's split cannot change which blocks a lane runs)."""
    if r.n_lanes > 1:
        pooled_parallel_for(r.n_lanes, 2, 1, fn, r)
    else:
        fn(r, 0, 1)


# -- forward ----------------------------------------------------------------------------------

cdef void forward_block(Lane* L, Py_ssize_t o, Py_ssize_t m) noexcept nogil:
    """The group's steps in order on the block [o, o + m) (the same kernels eager calls; a
    sincos gives the bits of the sin and cos kernels)."""
    cdef FusedRun* r = L.r
    cdef FuseGroup* G = r.G
    cdef Py_ssize_t i, sa, sb
    cdef Step* s
    cdef const void* pa
    cdef const void* pb
    cdef bint f64 = r.f64
    for i in range(G.first, G.last + 1):
        s = &r.steps[i]
        if s.kind == SK_BINARY:
            pa = operand_at(L, s, False, o, &sa)
            pb = operand_at(L, s, True, o, &sb)
            k_binary(f64, s.kop, m, pa, sa, pb, sb, value_at(L, s.out, o))
        elif s.partner < 0 or not r.partners:
            k_unary(f64, s.kop, m, value_at(L, s.a, o), value_at(L, s.out, o))
        elif s.kop == TG_SIN:
            k_sincos(f64, m, value_at(L, s.a, o), value_at(L, s.out, o), partner_at(L, s, o))
        else:
            k_sincos(f64, m, value_at(L, s.a, o), partner_at(L, s, o), value_at(L, s.out, o))


cdef void forward_lanes(void* ctx, ptrdiff_t begin, ptrdiff_t end) noexcept nogil:
    cdef FusedRun* r = <FusedRun*>ctx
    cdef Lane L
    cdef Py_ssize_t j, b, b0, b1, o
    for j in range(begin, end):
        lane_at(r, j, &L)
        lane_blocks(r, j, &b0, &b1)
        for b in range(b0, b1):
            o = b * r.block
            forward_block(&L, o, r.block if r.G.n - o > r.block else r.G.n - o)


cdef int fused_forward(Program p, BufferSet bs, FuseGroup* G) except -1:
    cdef FusedRun r
    cdef Py_ssize_t j, k
    for j in range(G.copy_base, G.copy_base + G.n_copies):
        k = <Py_ssize_t>p.copy_slots[j]     # (a recomputing group's inputs, as they are now)
        memcpy(bs.cptr[j], bs.ptr[k], <size_t>p.sizes[k] * p.item)
    prepare_run(p, bs, G, &r, False)
    run_lanes(&r, forward_lanes)
    return 0


# -- backward ---------------------------------------------------------------------------------

cdef inline char* adjoint_at(Lane* L, Py_ssize_t k, Py_ssize_t o) noexcept nogil:
    cdef FusedRun* r = L.r
    if r.arow[k] >= 0:
        return L.rowp + r.arow[k] * r.row_len
    return <char*>r.aptr[k] + o * r.item


cdef inline char* dest_of(Lane* L, Py_ssize_t k, int bc, Py_ssize_t o) noexcept nogil:
    """Where the contribution to slot k of the block at o is written: a one-element slot's
    full-size buffer, k's adjoint itself for its first contribution, else scratch row 0."""
    if bc >= 0:
        L.bcw[bc] = 1
        return <char*>L.r.bcp[bc] + o * L.r.item
    if not L.touched[k]:
        return adjoint_at(L, k, o)
    return L.rowp + L.r.scratch_row * L.r.row_len


cdef inline void took_at(Lane* L, Py_ssize_t k, int bc, char* dst, Py_ssize_t o,
                         Py_ssize_t m) noexcept nogil:
    """Finish a contribution written at dest_of: added to k's adjoint, after its earlier ones."""
    cdef char* adj
    if bc >= 0:
        return
    if not L.touched[k]:
        L.touched[k] = 1
        return
    adj = adjoint_at(L, k, o)
    k_binary(L.r.f64, TG_ADD, m, adj, 1, dst, 1, adj)


cdef inline void copy_or_negate(Lane* L, bint neg, Py_ssize_t m, const char* g,
                                char* dst) noexcept nogil:
    if neg:
        k_unary(L.r.f64, TG_NEG, m, g, dst)
    elif dst != g:                      # (equal: the operand's adjoint took over g's row)
        memcpy(dst, g, m * L.r.item)


cdef void fused_backward_block(Lane* L, Py_ssize_t o, Py_ssize_t m) noexcept nogil:
    """The group's steps' VJPs on the block [o, o + m), in the sweep's order (see
    Program.backward_step and backward_unary for the formulas, term by term)."""
    cdef FuseGroup* G = L.r.G
    cdef Py_ssize_t i, sa, sb
    cdef Step* s
    cdef bint f64 = L.r.f64
    cdef const void* pa
    cdef const void* pb
    cdef char* g
    cdef char* dst
    cdef char* s1 = L.rowp + (L.r.scratch_row + 1) * L.r.row_len
    cdef double e1
    cdef float f1
    for i in range(G.last, G.first - 1, -1):
        s = &L.r.steps[i]
        if not L.touched[s.out]:
            continue
        g = adjoint_at(L, s.out, o)
        if s.kind == SK_BINARY:
            pa = operand_at(L, s, False, o, &sa)
            pb = operand_at(L, s, True, o, &sb)
            if s.kop == TG_ADD or s.kop == TG_SUB:
                if s.grad_a:
                    dst = dest_of(L, s.a, s.bc_a, o)
                    copy_or_negate(L, False, m, g, dst)
                    took_at(L, s.a, s.bc_a, dst, o, m)
                if s.grad_b:
                    dst = dest_of(L, s.b, s.bc_b, o)
                    copy_or_negate(L, s.kop == TG_SUB, m, g, dst)
                    took_at(L, s.b, s.bc_b, dst, o, m)
            elif s.kop == TG_MUL:
                if s.grad_a:
                    dst = dest_of(L, s.a, s.bc_a, o)
                    k_binary(f64, TG_MUL, m, g, 1, pb, sb, dst)
                    took_at(L, s.a, s.bc_a, dst, o, m)
                if s.grad_b:
                    dst = dest_of(L, s.b, s.bc_b, o)
                    k_binary(f64, TG_MUL, m, g, 1, pa, sa, dst)
                    took_at(L, s.b, s.bc_b, dst, o, m)
            elif s.kop == TG_DIV:
                if s.grad_a:
                    dst = dest_of(L, s.a, s.bc_a, o)
                    k_binary(f64, TG_DIV, m, g, 1, pb, sb, dst)
                    took_at(L, s.a, s.bc_a, dst, o, m)
                if s.grad_b:
                    dst = dest_of(L, s.b, s.bc_b, o)     # -g * ((a / b) / b), as vjp_div
                    k_binary(f64, TG_DIV, m, pa, sa, pb, sb, s1)
                    k_binary(f64, TG_DIV, m, s1, 1, pb, sb, s1)
                    k_unary(f64, TG_NEG, m, g, dst)
                    k_binary(f64, TG_MUL, m, dst, 1, s1, 1, dst)
                    took_at(L, s.b, s.bc_b, dst, o, m)
            elif s.grad_a:                      # ** a number: g * (a ** (e - 1) * e)
                dst = dest_of(L, s.a, s.bc_a, o)
                if s.cb == 0:
                    memset(dst, 0, m * L.r.item)
                else:
                    e1 = s.cb - 1
                    f1 = <float>e1
                    k_binary(f64, TG_POW, m, pa, 1, <void*>&e1 if f64 else <void*>&f1, 0, s1)
                    k_binary(f64, TG_MUL, m, s1, 1, <void*>&s.cb if f64 else <void*>&s.fb, 0,
                             s1)
                    k_binary(f64, TG_MUL, m, g, 1, s1, 1, dst)
                took_at(L, s.a, s.bc_a, dst, o, m)
            continue
        if not s.grad_a:
            continue
        dst = dest_of(L, s.a, s.bc_a, o)
        if s.op == OP_NEG:
            k_unary(f64, TG_NEG, m, g, dst)
        elif s.op == OP_EXP:
            k_binary(f64, TG_MUL, m, g, 1, value_at(L, s.out, o), 1, dst)
        elif s.op == OP_LOG:
            k_binary(f64, TG_DIV, m, g, 1, value_at(L, s.a, o), 1, dst)
        elif s.op == OP_TANH:
            k_binary(f64, TG_TANH_GRAD, m, g, 1, value_at(L, s.out, o), 1, dst)
        elif s.op == OP_RELU:
            k_binary(f64, TG_RELU_GRAD, m, g, 1, value_at(L, s.out, o), 1, dst)
        elif s.kop == TG_SIGMOID:
            k_binary(f64, TG_SIGMOID_GRAD, m, g, 1, value_at(L, s.out, o), 1, dst)
        elif s.kop == TG_SIN:                   # g * cos(x), cos(x) from the forward's pass
            k_binary(f64, TG_MUL, m, g, 1, partner_at(L, s, o), 1, dst)
        else:                                   # cos: g * -sin(x), likewise
            k_unary(f64, TG_NEG, m, partner_at(L, s, o), s1)
            k_binary(f64, TG_MUL, m, g, 1, s1, 1, dst)
        took_at(L, s.a, s.bc_a, dst, o, m)


cdef void backward_lanes(void* ctx, ptrdiff_t begin, ptrdiff_t end) noexcept nogil:
    cdef FusedRun* r = <FusedRun*>ctx
    cdef FuseGroup* G = r.G
    cdef Lane L
    cdef Py_ssize_t j, b, b0, b1, o, m
    for j in range(begin, end):
        lane_at(r, j, &L)
        memset(L.bcw, 0, r.n_bc)
        lane_blocks(r, j, &b0, &b1)
        for b in range(b0, b1):
            o = b * r.block
            m = r.block if G.n - o > r.block else G.n - o
            if G.recompute:             # the block's values again, into its rows
                forward_block(&L, o, m)
            # which adjoints hold a value: the same for every block (the sweep's pattern does
            # not depend on values), so each block starts from the state before the group
            memcpy(L.touched, r.touched0, r.n_slots)
            fused_backward_block(&L, o, m)


cdef int fused_backward(Program p, BufferSet bs, Py_ssize_t g_index) except -1:
    cdef FuseGroup* G = &p.groups[g_index]
    cdef Py_ssize_t i, j, k
    cdef FusedRun r
    cdef bint any_out = False
    cdef void** inputs = NULL
    for i in range(G.first, G.last + 1):
        if bs.touched[p.steps[i].out]:
            any_out = True
            break
    if not any_out or G.n == 0:
        return 0
    for k in <list>p.group_writes[g_index]:
        if bs.touched[k] and bs.given[k] is not None:  # not ours to write: moved into adj[k]
            own = cnp.PyArray_DATA(<cnp.ndarray>bs.adj[k])
            memcpy(own, bs.aptr[k], p.sizes[k] * p.item)
            bs.aptr[k] = own
            bs.given[k] = None
    for i in range(G.bc_base, G.bc_base + G.n_bc):
        if bs.bc[i] is None:
            bs.bc[i] = np.empty(G.n, p.dtype)
            bs.bcp[i] = cnp.PyArray_DATA(<cnp.ndarray>bs.bc[i])
    prepare_run(p, bs, G, &r, True)
    if G.recompute:                 # its inputs as the forward read them: their copies
        inputs = <void**>malloc(p.n_slots * sizeof(void*))
        if inputs == NULL:
            raise MemoryError()
        memcpy(inputs, bs.ptr, p.n_slots * sizeof(void*))
        for j in range(G.copy_base, G.copy_base + G.n_copies):
            inputs[<Py_ssize_t>p.copy_slots[j]] = bs.cptr[j]
        r.ptr = inputs
    run_lanes(&r, backward_lanes)
    free(inputs)
    # every block left the same flags: lane 0's (it ran at least one block) are the group's
    memcpy(bs.touched, r.touched, p.n_slots)
    for i in range(G.bc_base, G.bc_base + G.n_bc):
        bs.bcw[i] = 0
        for j in range(r.n_lanes):
            if r.bcw[j * r.n_bc + i]:
                bs.bcw[i] = 1
    # the one-element slots' contributions, each summed as eager sums it, in the sweep's order
    for i in range(G.bc_base, G.bc_base + G.n_bc):
        if bs.bcw[i]:
            k, out = p.bc_slots[i]
            p.give_full(bs, k, bs.bcp[i], out, True)
    return 0
