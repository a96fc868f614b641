// Kernels for the lookup_table rule (tests/lookup_table.sh): a pure math
// expression of one 8-bit value computed in a loop. A window filter over a
// byte image in the older style (macros, C89 loop variables, 2-D blocks, a
// sum straight into a local), a grid-stride gamma correction with the
// exponent a kernel parameter, a signed char sequence scored through exp;
// then kernels the rule must leave alone; wider integers; and floats and
// doubles whose spec says they hold integers.

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

/* Floats and doubles that hold integers: a float read from a buffer is a
 * value where the spec (or a capture) shows it holds integers in
 * [0, 4096); looked up where it is one of the table's integers, computed
 * as written for anything else (-0.0, NaN, 0.5, 1e30). */

/* A 3x3 log-energy over an 8-bit image uploaded as floats (the usual
 * convertTo(CV_32F) path: every pixel still holds 0..255), one thread per
 * pixel from a flat index, the window unrolled. */
/* kernelsmith:
 *   size timed: w = 3840, h = 2160
 *   size odd:   w = 41, h = 23
 *   in  src[w * h] int(0, 255)
 *   out dst[w * h]
 *   launch grid = ceil_div(w * h, 256), block = 256
 */
__global__ void log_energy_f32(const float *__restrict__ src, float *__restrict__ dst, int w,
                               int h) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= w * h) return;
  const int x = idx % w, y = idx / w;
  float acc = 0.f;
#pragma unroll
  for (int oy = -1; oy <= 1; ++oy) {
    const int yy = min(max(y + oy, 0), h - 1);
#pragma unroll
    for (int ox = -1; ox <= 1; ++ox) {
      const int xx = min(max(x + ox, 0), w - 1);
      acc += log1pf(src[yy * w + xx]);
    }
  }
  dst[idx] = acc * (1.0f / 9.0f);
}

/* Display gamma of 10-bit raw sensor values kept as floats (0..1023),
 * normalised by the white level: a grid-stride loop over an unsigned
 * count; the table needs 1024 entries. */
/* kernelsmith:
 *   size timed: n = 1 << 24
 *   size odd:   n = 4099
 *   scalar inv_gamma = 0.4545
 *   scalar white = 1023
 *   in  raw[n] int(0, 1023)
 *   out rgb[n]
 *   launch grid = 1024, block = 128
 */
__global__ void gamma_raw10(const float *raw, float *rgb, float inv_gamma, float white,
                            unsigned n)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
  {
    rgb[i] = powf(raw[i] / white, inv_gamma);
  }
}

/* Anscombe's variance-stabilising transform of photon counts a detector
 * stores as doubles (0..1000 per frame), averaged over frames; each count
 * is read into a local first. */
/* kernelsmith:
 *   size timed: npix = 1 << 20, frames = 16
 *   size odd:   npix = 999, frames = 3
 *   in  counts[npix * frames] int(0, 1000)
 *   out stab[npix]
 *   launch grid = ceil_div(npix, 128), block = 128
 */
__global__ void anscombe_frames(const double *counts, double *stab, int npix, int frames)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npix)
        return;
    double s = 0.0;
    for (int f = 0; f < frames; ++f)
    {
        double c = counts[(size_t)f * npix + p];
        s += 2.0 * sqrt(c + 0.375);
    }
    stab[p] = s / frames;
}

/* refused: a 16-bit depth map as floats holds integers past the largest
 * table (4096 entries). */
/* kernelsmith:
 *   size timed: n = 1 << 20, k = 8
 *   in  depth[n + k] int(0, 65535)
 *   out y[n]
 *   launch grid = ceil_div(n, 128), block = 128
 */
__global__ void log_depth16(const float *depth, float *y, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int j = 0; j < k; ++j) s += log2f(1.0f + depth[i + j]);
  y[i] = s;
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
  log_energy_f32<<<(w * h + 255) / 256, 256>>>(x, f, w, h);
  gamma_raw10<<<1024, 128>>>(x, f, 0.4545f, 1023.0f, (unsigned)n);
  anscombe_frames<<<(n + 127) / 128, 128>>>((const double *)x, (double *)f, n, k);
  log_depth16<<<(n + 127) / 128, 128>>>(x, f, n, k);
}
#endif
