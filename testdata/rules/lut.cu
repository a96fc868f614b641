// Kernels for the lookup_table rule (tests/lookup_table.sh): a pure math
// expression of one 8-bit value computed in a loop. A window filter over a
// byte image in the older style (macros, C89 loop variables, 2-D blocks, a
// sum straight into a local), a grid-stride gamma correction with the
// exponent a kernel parameter, a signed char sequence scored through exp;
// then kernels the rule must leave alone.

#define W_RADIUS 2

/* Local log-energy of an 8-bit image: the sum over a 5x5 window of
 * log(1 + pixel), each pixel's logarithm recomputed for every window that
 * holds it. */
/* kernelsmith:
 *   size timed: width = 4096, height = 2048
 *   size odd:   width = 37, height = 29
 *   in  img[width * height] int(0, 255)
 *   out energy[width * height]
 *   launch grid = dim3(ceil_div(width, 32), ceil_div(height, 8)), block = dim3(32, 8)
 */
__global__ void log_energy(const unsigned char *img, float *energy, int width, int height)
{
    int x, y, dx, dy;
    float s;

    x = blockIdx.x * blockDim.x + threadIdx.x;
    y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    s = 0.0f;
    for (dy = -W_RADIUS; dy <= W_RADIUS; dy++)
        for (dx = -W_RADIUS; dx <= W_RADIUS; dx++) {
            int xx = min(max(x + dx, 0), width - 1);
            int yy = min(max(y + dy, 0), height - 1);
            s += logf(1.0f + (float)img[yy * width + xx]);
        }
    energy[y * width + x] = s;
}

/* Gamma correction of 8-bit pixels into floats, several per thread. */
/* kernelsmith:
 *   size timed: n = 1 << 24
 *   size odd:   n = 1001
 *   scalar gamma = 2.2
 *   in  in[n] int(0, 255)
 *   out out[n]
 *   launch grid = 264, block = 256
 */
__global__ void gamma_correct(const unsigned char *__restrict__ in, float *__restrict__ out,
                              float gamma, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = 255.0f * powf(in[i] / 255.0f, 1.0f / gamma);
}

/* A score of a signed char sequence: exp of each value, scaled. */
/* kernelsmith:
 *   size timed: n = 1 << 20, k = 64
 *   size odd:   n = 333, k = 5
 *   in  seq[n + k] int(-128, 127)
 *   out score[n]
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void window_softscore(const signed char *seq, float *score, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int j = 0; j < k; ++j)
    acc += expf(0.05f * seq[i + j]) - expf(-0.05f * seq[i + j]);
  score[i] = acc;
}

/* refused: the logarithm is of a float value (no small range). */
/* kernelsmith:
 *   size timed: n = 1 << 20, k = 16
 *   in  x[n + k] uniform(1, 2)
 *   out y[n]
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void log_floats(const float *x, float *y, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int j = 0; j < k; ++j) s += logf(x[i + j]);
  y[i] = s;
}

/* refused: the expression also depends on the thread (x). */
/* kernelsmith:
 *   size timed: n = 1 << 20, k = 16
 *   in  b[n + k] int(0, 255)
 *   out y[n]
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void log_per_thread(const unsigned char *b, float *y, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int j = 0; j < k; ++j) s += logf(1.0f + b[i + j] + (float)i);
  y[i] = s;
}

/* refused: the math call is not in a loop (once per thread, a table costs
 * what it saves). */
/* kernelsmith:
 *   size timed: n = 1 << 20
 *   in  b[n] int(0, 255)
 *   out y[n]
 *   launch grid = ceil_div(n, 256), block = 256
 */
__global__ void log_once(const unsigned char *b, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = logf(1.0f + b[i]);
}

/* Wider integers, looked up in [0, N) and computed as written elsewhere. */

/* The entropy of a 16-bin histogram over a 5x5 window, the way image
 * code writes it: counts in a local array, p through a local, log2f per bin.
 * A count lies in 0..25 (the table's keys), p = count / 25. */
/* kernelsmith:
 *   size timed: width = 2048, height = 2048
 *   size odd:   width = 37, height = 29
 *   in  img[width * height] int(0, 255)
 *   out ent[width * height] tol(atol = 1e-5, rtol = 1e-5)
 *   launch grid = dim3(ceil_div(width, 16), ceil_div(height, 16)), block = dim3(16, 16)
 */
__global__ void window_hist_entropy(const unsigned char *img, float *ent, int width, int height)
{
    int x, y, dx, dy, k;
    int count[16];
    float e;

    x = blockIdx.x * blockDim.x + threadIdx.x;
    y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    for (k = 0; k < 16; k++)
        count[k] = 0;
    for (dy = -W_RADIUS; dy <= W_RADIUS; dy++)
        for (dx = -W_RADIUS; dx <= W_RADIUS; dx++) {
            int xx = min(max(x + dx, 0), width - 1);
            int yy = min(max(y + dy, 0), height - 1);
            count[img[yy * width + xx] >> 4]++;
        }
    e = 0.0f;
    for (k = 0; k < 16; k++)
        if (count[k] > 0) {
            float p = count[k] / 25.0f;
            e -= p * log2f(p);
        }
    ent[y * width + x] = e;
}

/* Weights that halve every `half_life` steps of an age kept in shorts; an
 * age of any short value is taken (negative ones too: computed as written). */
/* kernelsmith:
 *   size timed: n = 1 << 22
 *   size odd:   n = 1001
 *   in  age[n] int(0, 900)
 *   out w[n]
 *   scalar half_life = 64
 *   launch grid = 512, block = 256
 */
__global__ void decay_weights(const short *age, float *w, float half_life, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    w[i] = exp2f(-(float)age[i] / half_life);
}

#ifndef KS_CPU_EMU
void run_all(const unsigned char *img, const signed char *seq, const float *x, float *f, int w,
             int h, int n, int k) {
  dim3 block(32, 8);
  dim3 grid((w + 31) / 32, (h + 7) / 8);
  log_energy<<<grid, block>>>(img, f, w, h);
  gamma_correct<<<264, 256>>>(img, f, 2.2f, n);
  window_softscore<<<(n + 127) / 128, 128>>>(seq, f, n, k);
  log_floats<<<(n + 127) / 128, 128>>>(x, f, n, k);
  log_per_thread<<<(n + 127) / 128, 128>>>(img, f, n, k);
  log_once<<<(n + 255) / 256, 256>>>(img, f, n);
  window_hist_entropy<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(img, f, w, h);
  decay_weights<<<512, 256>>>((const short *)x, f, 64.0f, n);
}
#endif
