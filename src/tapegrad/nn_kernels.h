/* tapegrad's window and recurrent kernels (nn_kernels.c): the loops of convolution, pooling and the
 * recurrent layers that numpy cannot express without a Python loop or a temporary per window or
 * per time step.
 *
 * Every kernel exists for float (_f32) and double (_f64).  Arrays are C-contiguous unless a stride
 * argument says otherwise; sizes are element counts (ptrdiff_t).  Kernels never fail and never
 * touch Python objects: the Cython layer (ops_nn_kernels.pxi) checks shapes, dtypes and contiguity
 * before it calls them. */
#ifndef TAPEGRAD_NN_KERNELS_H
#define TAPEGRAD_NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Where the windows of a 2-d sliding-window op lie (1-d ops use height 1). */
typedef struct {
    ptrdiff_t N, C, H, W;       /* input batch, channels, height, width */
    ptrdiff_t Ho, Wo;           /* window positions */
    ptrdiff_t kh, kw, sh, sw;   /* kernel size, stride */
    ptrdiff_t pt, pl, dh, dw;   /* top/left padding (bottom/right follow from Ho/Wo), dilation */
} tg_window;

/* im2col: cols[(c*kh + i)*kw + j][n][ho*Wo + wo] = x[n][c][ho*sh - pt + i*dh][wo*sw - pl + j*dw],
 * or `fill` where that position is padding.  The row stride (between kernel taps) and the sample
 * stride (between n) are given, so one kernel writes both layouts the convolutions use:
 * (C*kh*kw, N*L) with row_stride = N*L, n_stride = L, and (N, C*kh*kw, L) with row_stride = L,
 * n_stride = C*kh*kw*L (L = Ho*Wo). */
void tg_im2col_f32(const float* x, float* cols, const tg_window* g, ptrdiff_t row_stride,
                   ptrdiff_t n_stride, float fill);
void tg_im2col_f64(const double* x, double* cols, const tg_window* g, ptrdiff_t row_stride,
                   ptrdiff_t n_stride, double fill);

/* col2im, the adjoint of im2col: x (zeroed here first) receives the sum of the column entries read
 * from each of its positions; entries that fell on padding are dropped. */
void tg_col2im_f32(const float* cols, float* x, const tg_window* g, ptrdiff_t row_stride,
                   ptrdiff_t n_stride);
void tg_col2im_f64(const double* cols, double* x, const tg_window* g, ptrdiff_t row_stride,
                   ptrdiff_t n_stride);

/* -- fused 2-d convolution --------------------------------------------------------------------
 * x (N, C, H, W), w (O, C/G, kh, kw), y (N, O, Ho, Wo), G groups (C and O divisible by G); the
 * geometry g gives N, C, H, W, Ho, Wo and the window.  The columns of a block of output positions
 * are formed in `work` (tg_conv2d_work_size elements for the same g, O, G and map) and used at
 * once, the results written straight to their NCHW places:
 *   tg_conv2d:              y = conv(x, w) (+ bias[o], bias NULL when absent);
 *   tg_conv2d_grad_input:   gx (N, C, H, W) = the adjoint of conv in x applied to gy (N, O, Ho, Wo)
 *                           (also the transposed convolution);
 *   tg_conv2d_grad_weight:  gw (O, C/G, kh, kw) = the adjoint of conv in w applied to gy, summed
 *                           over the batch.
 * Sums run in a different order than one GEMM's (blocked, vector partial sums), so results agree
 * with the BLAS path to rounding, not bit for bit. */
enum { TG_CONV_FORWARD = 0, TG_CONV_GRAD_INPUT = 1, TG_CONV_GRAD_WEIGHT = 2 };
ptrdiff_t tg_conv2d_work_size_f32(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which);
ptrdiff_t tg_conv2d_work_size_f64(const tg_window* g, ptrdiff_t O, ptrdiff_t G, int which);
void tg_conv2d_f32(const float* x, const float* w, const float* bias, float* y, const tg_window* g,
                   ptrdiff_t O, ptrdiff_t G, float* work);
void tg_conv2d_f64(const double* x, const double* w, const double* bias, double* y,
                   const tg_window* g, ptrdiff_t O, ptrdiff_t G, double* work);
void tg_conv2d_grad_input_f32(const float* gy, const float* w, float* gx, const tg_window* g,
                              ptrdiff_t O, ptrdiff_t G, float* work);
void tg_conv2d_grad_input_f64(const double* gy, const double* w, double* gx, const tg_window* g,
                              ptrdiff_t O, ptrdiff_t G, double* work);
void tg_conv2d_grad_weight_f32(const float* x, const float* gy, float* gw, const tg_window* g,
                               ptrdiff_t O, ptrdiff_t G, float* work);
void tg_conv2d_grad_weight_f64(const double* x, const double* gy, double* gw, const tg_window* g,
                               ptrdiff_t O, ptrdiff_t G, double* work);

/* y (N, O, Ho/2, Wo/2), idx = tg_relu_max_pool2d of tg_conv2d's output with the 2x2 / stride 2
 * pooling (no padding, dilation 1; an odd last row or column dropped), bit for bit, without the
 * full-size convolution output: each block of an even number of output rows is computed into the
 * work buffer and relu'd and pooled from there while in cache.  keep[k] = relu's gradient test at
 * window k's chosen position (1 where the convolution's output there is > 0 or NaN), for
 * tg_max_pool2d_grad_kept.  work: tg_conv2d_relu_pool_work_size elements.  Ho, Wo >= 2. */
ptrdiff_t tg_conv2d_relu_pool_work_size_f32(const tg_window* g, ptrdiff_t O, ptrdiff_t G);
ptrdiff_t tg_conv2d_relu_pool_work_size_f64(const tg_window* g, ptrdiff_t O, ptrdiff_t G);
void tg_conv2d_relu_pool_f32(const float* x, const float* w, const float* bias, float* y,
                             int64_t* idx, uint8_t* keep, const tg_window* g, ptrdiff_t O,
                             ptrdiff_t G, float* work);
void tg_conv2d_relu_pool_f64(const double* x, const double* w, const double* bias, double* y,
                             int64_t* idx, uint8_t* keep, const tg_window* g, ptrdiff_t O,
                             ptrdiff_t G, double* work);

/* Max pooling over the N*C planes of x: y the maximum of each window's real (non-padding)
 * elements, idx its flat position h*W + w in the plane.  PyTorch's rules: ties keep the first
 * position in row-major window order, a NaN replaces the running maximum (so the last NaN wins),
 * and a window with no real element (possible with dilation) gives -inf at the first position at
 * or after its top-left corner on the dilation grid (which may lie outside the plane). */
void tg_max_pool2d_f32(const float* x, float* y, int64_t* idx, const tg_window* g);
void tg_max_pool2d_f64(const double* x, double* y, int64_t* idx, const tg_window* g);

/* Max pooling of relu(x), bit for bit tg_max_pool2d on the output of the relu kernel
 * (x < 0 ? 0 : x, kernels.c's TG_RELU): each plane's relu goes to `plane` (H*W elements, stays in
 * cache) and is pooled from there, so a replay whose relu output only feeds the pooling never
 * writes nor re-reads the full-size relu output. */
void tg_relu_max_pool2d_f32(const float* x, float* y, int64_t* idx, const tg_window* g,
                            float* plane);
void tg_relu_max_pool2d_f64(const double* x, double* y, int64_t* idx, const tg_window* g,
                            double* plane);

/* The gradient of max pooling: gx (zeroed here first; N*C planes of H*W) += gy at idx.  Indices
 * outside the plane (windows with no real element) are dropped.  With `xmask` (the input x of
 * tg_relu_max_pool2d, else NULL) nothing goes to a position where x <= 0: relu's gradient
 * (TG_RELU_GRAD: 0 where relu's output <= 0, i.e. where x <= 0; a NaN passes) applied to the
 * pooling's, per contribution (a position gets all of its windows' or none). */
void tg_max_pool2d_grad_f32(const float* gy, const int64_t* idx, float* gx, const tg_window* g,
                            const float* xmask);
void tg_max_pool2d_grad_f64(const double* gy, const int64_t* idx, double* gx, const tg_window* g,
                            const double* xmask);
/* The same gradient of relu followed by max pooling with relu's test already made: nothing goes
 * from the windows where keep[k] == 0 (tg_conv2d_relu_pool's keep). */
void tg_max_pool2d_grad_kept_f32(const float* gy, const int64_t* idx, float* gx, const tg_window* g,
                                 const uint8_t* keep);
void tg_max_pool2d_grad_kept_f64(const double* gy, const int64_t* idx, double* gx,
                                 const tg_window* g, const uint8_t* keep);

/* -- recurrent cells: one time step of B rows, hidden size H ----------------------------------
 * The hidden-side matmul (h W_hh^T) is done by the caller's BLAS; these fuse the rest of a step.
 *
 * LSTM, gates in PyTorch's order (i, f, g, o), each row of `gates` 4H wide:
 *   forward: gates = gi + hh (pre-activations) -> acts (i, f, g, o after sigmoid/tanh), c = f*c0 + i*g,
 *            tc = tanh(c), h = o*tc.  acts, c, tc are what the backward needs.
 *   backward: from dh (upstream gradient of h) and dc (in: gradient of c from the next step;
 *            out: the gradient of c0), the pre-activation gradients dgates (B, 4H). */
void tg_lstm_fwd_f32(ptrdiff_t B, ptrdiff_t H, const float* gi, const float* hh, const float* c0,
                     float* acts, float* c, float* tc, float* h);
void tg_lstm_fwd_f64(ptrdiff_t B, ptrdiff_t H, const double* gi, const double* hh,
                     const double* c0, double* acts, double* c, double* tc, double* h);
void tg_lstm_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* c0,
                     const float* tc, const float* dh, float* dc, float* dgates);
void tg_lstm_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* c0,
                     const double* tc, const double* dh, double* dc, double* dgates);

/* GRU, gates (r, z, n), rows 3H wide; gi = W_ih x + b_ih, hh = W_hh h0 + b_hh:
 *   r = sigmoid(gi_r + hh_r), z = sigmoid(gi_z + hh_z), n = tanh(gi_n + r*hh_n),
 *   h = n + z*(h0 - n).  acts keeps (r, z, n) and hn the hidden-side n part hh_n.
 *   backward: dgi (B, 3H) and dhh (B, 3H) (the gradient of gi and of hh), dh0 = dh*z (the direct
 *   path; the caller adds dhh W_hh). */
void tg_gru_fwd_f32(ptrdiff_t B, ptrdiff_t H, const float* gi, const float* hh, const float* h0,
                    float* acts, float* h);
void tg_gru_fwd_f64(ptrdiff_t B, ptrdiff_t H, const double* gi, const double* hh,
                    const double* h0, double* acts, double* h);
void tg_gru_bwd_f32(ptrdiff_t B, ptrdiff_t H, const float* acts, const float* hh,
                    const float* h0, const float* dh, float* dgi, float* dhh, float* dh0);
void tg_gru_bwd_f64(ptrdiff_t B, ptrdiff_t H, const double* acts, const double* hh,
                    const double* h0, const double* dh, double* dgi, double* dhh, double* dh0);

/* Elman RNN: h = act(gi + hh), act tanh (relu = 0) or relu (relu = 1); backward: dpre = dh * act'
 * evaluated from h (PyTorch's threshold_backward for relu: 0 where h <= 0). */
void tg_rnn_fwd_f32(ptrdiff_t B, ptrdiff_t H, int relu, const float* gi, const float* hh, float* h);
void tg_rnn_fwd_f64(ptrdiff_t B, ptrdiff_t H, int relu, const double* gi, const double* hh,
                    double* h);
void tg_rnn_bwd_f32(ptrdiff_t B, ptrdiff_t H, int relu, const float* h, const float* dh,
                    float* dpre);
void tg_rnn_bwd_f64(ptrdiff_t B, ptrdiff_t H, int relu, const double* h, const double* dh,
                    double* dpre);

/* -- a GEMM whose right operand is packed once and used many times -------------------------
 * The recurrent layers multiply a new small left operand by the same hidden weights at every
 * time step.  tg_gemm_pack copies B (K x N, element (k, n) at b[k*rs + n*cs]: W or a transpose
 * of it) into `packed` (tg_gemm_packed_size elements); tg_gemm_packed then computes
 *   c (M x N, row stride ldc) = a (M x K, row stride lda) @ B (+ bias[n]) (+ add (M x N, row
 *   stride ldadd)),
 * bias and add NULL when absent; c may not overlap a or add.  Each element is one dot product in
 * k order (AVX2 + FMA where the CPU has it), independent of M. */
ptrdiff_t tg_gemm_packed_size_f32(ptrdiff_t K, ptrdiff_t N);
ptrdiff_t tg_gemm_packed_size_f64(ptrdiff_t K, ptrdiff_t N);
void tg_gemm_pack_f32(ptrdiff_t K, ptrdiff_t N, const float* b, ptrdiff_t rs, ptrdiff_t cs,
                      float* packed);
void tg_gemm_pack_f64(ptrdiff_t K, ptrdiff_t N, const double* b, ptrdiff_t rs, ptrdiff_t cs,
                      double* packed);
void tg_gemm_packed_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                        const float* packed, const float* bias, const float* add,
                        ptrdiff_t ldadd, float* c, ptrdiff_t ldc);
void tg_gemm_packed_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a, ptrdiff_t lda,
                        const double* packed, const double* bias, const double* add,
                        ptrdiff_t ldadd, double* c, ptrdiff_t ldc);

/* c (M x N, row stride ldc) = a^T @ B with a (K x M, row stride lda): the weight gradients of the
 * recurrent layers (sum over steps of dgates^T x), B packed by tg_gemm_pack.  Runs only where the
 * AVX-512 kernel does (returns 1); returns 0 without touching c elsewhere, where BLAS, which packs
 * the transpose itself, is as fast as the AVX2 kernel would be. */
int tg_gemm_packed_at_f32(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const float* a, ptrdiff_t lda,
                          const float* packed, float* c, ptrdiff_t ldc);
int tg_gemm_packed_at_f64(ptrdiff_t M, ptrdiff_t N, ptrdiff_t K, const double* a, ptrdiff_t lda,
                          const double* packed, double* c, ptrdiff_t ldc);

/* Attention's softmax over the rows (rows x cols, C-contiguous, in place) of the scores s:
 * s = softmax(scale * s) per row, the maximum subtracted first, exp vectorised (vecmath.h); the
 * row sums accumulate in double.  A row whose entries are all -inf (a query that may attend
 * nothing) becomes zeros, as PyTorch's math kernel gives, not NaN.
 * backward, in place on dp (the gradient of the probabilities p):
 *   dp = scale * p * (dp - sum(dp * p)) per row. */
void tg_attn_softmax_f32(ptrdiff_t rows, ptrdiff_t cols, float scale, float* s);
void tg_attn_softmax_f64(ptrdiff_t rows, ptrdiff_t cols, double scale, double* s);
void tg_attn_softmax_grad_f32(ptrdiff_t rows, ptrdiff_t cols, float scale, const float* p,
                              float* dp);
void tg_attn_softmax_grad_f64(ptrdiff_t rows, ptrdiff_t cols, double scale, const double* p,
                              double* dp);

/* Layer normalisation over the last N elements (N <= TG_SUM_MAX_N, kernels.h) of M C-contiguous
 * rows, as the numpy formula computes it (each operation rounded to T, sums in np.add.reduce's
 * order): mean, xc = x - mean, var = mean(xc * xc), rstd = 1 / sqrt(var + eps), xhat = xc * rstd,
 * y = xhat * w + b (w, b may be NULL).  xhat (M*N) and rstd (M) are kept for the backward; work:
 * N elements of scratch.
 * backward: gx = rstd * ((gw - mean(gw)) - xhat * mean(gw * xhat)) per row with gw = g * w (g when
 * w is NULL), written when gx is not NULL; acc_w and acc_b (N each, when not NULL) receive the
 * column sums of g * xhat and of g, accumulated row after row; work: 2N elements of scratch. */
void tg_layer_norm_fwd_f32(ptrdiff_t M, ptrdiff_t N, float eps, const float* x, const float* w,
                           const float* b, float* y, float* xhat, float* rstd, float* work);
void tg_layer_norm_fwd_f64(ptrdiff_t M, ptrdiff_t N, double eps, const double* x,
                           const double* w, const double* b, double* y, double* xhat,
                           double* rstd, double* work);
void tg_layer_norm_bwd_f32(ptrdiff_t M, ptrdiff_t N, const float* g, const float* xhat,
                           const float* rstd, const float* w, float* gx, float* acc_w,
                           float* acc_b, float* work);
void tg_layer_norm_bwd_f64(ptrdiff_t M, ptrdiff_t N, const double* g, const double* xhat,
                           const double* rstd, const double* w, double* gx, double* acc_w,
                           double* acc_b, double* work);

#endif
