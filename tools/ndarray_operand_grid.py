"""The grid for Tensor (op) numpy-operand parity (task gaps13 item 1, not fixed yet): prints
each cell (op, tensor dtype, operand kind, requires_grad, order, in-place) where tapegrad and
PyTorch differ.  Usage: python tools/ndarray_operand_grid.py [op ...]"""
import operator as O, numpy as np, torch, tapegrad, warnings
warnings.simplefilter('ignore')
ops={'add':O.add,'sub':O.sub,'mul':O.mul,'truediv':O.truediv,'matmul':O.matmul,'gt':O.gt,'eq':O.eq,'pow':O.pow,'floordiv':O.floordiv,'mod':O.mod}
def arr(kind):
    return {'i64':np.arange(1,5,dtype=np.int64).reshape(2,2),'f64':np.linspace(1,2,4).reshape(2,2),'f32':np.ones((2,2),np.float32),'0d':np.array(2.0),'npf':np.float64(2.0),'npi':np.int64(3),'b':np.ones((2,2),bool)}[kind]
def desc(r, T):
    if isinstance(r, T.Tensor): return ('T', str(r.dtype).split('.')[-1], r.requires_grad, r.grad_fn is not None, np.asarray(r.detach()).round(4).tolist())
    if isinstance(r, np.ndarray): return ('nd', str(r.dtype), np.asarray(r).round(4).tolist())
    return (type(r).__name__,)
def cell(T, op, tdt, kind, rg, rev, inplace):
    t=T.ones(2,2,dtype=getattr(T,tdt))*1.5 if tdt.startswith('float') else T.ones(2,2,dtype=getattr(T,tdt))
    if rg: t=t.detach().requires_grad_()
    a=arr(kind)
    try:
        if inplace:
            t2=t.clone() if not rg else t
            r=getattr(t2, f'__i{op}__')(a) if hasattr(t2,f'__i{op}__') else None
            return ('inplace',)+desc(t2,T) if r is not NotImplemented else ('NI',)
        r=ops[op](a,t) if rev else ops[op](t,a)
        return desc(r,T)
    except Exception as e: return ('E', type(e).__name__, str(e)[:50])
n=bad=0
import itertools, sys
only=sys.argv[1:] 
for op,tdt,kind,rg,rev,inp in itertools.product(ops,['float32','int64'],['i64','f64','f32','0d','npf','npi','b'],[False,True],[False,True],[False,True]):
    if inp and rev: continue
    if rg and tdt == 'int64': continue
    if inp and op in ('gt','eq','matmul'): continue
    a=cell(torch,op,tdt,kind,rg,rev,inp); b=cell(tapegrad,op,tdt,kind,rg,rev,inp); n+=1
    if a!=b:
        bad+=1
        if len(only)==0 or op in only: print(op,tdt,kind,'rg' if rg else '', 'rev' if rev else '', 'inplace' if inp else '', '\n   torch', a, '\n   tg   ', b)
print(n, 'cells', bad, 'differ')
