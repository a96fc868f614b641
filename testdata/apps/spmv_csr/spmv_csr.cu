// spmv_csr: y = A*x for a square sparse matrix in CSR format, one thread per
// row. Rows hold 0..32 nonzeros (16 on average) at random columns, so the
// reads of x are scattered and the row lengths diverge within a warp.
// Usage: ./spmv_csr [rows]
#include "../common/app_util.h"

/* kernelsmith:
 *   size timed: num_rows = 1 << 21, nnz = 16 * num_rows
 *   size small: num_rows = 1000, nnz = 16000
 *   size odd:   num_rows = 12345, nnz = 7 * 12345
 *   size one:   num_rows = 1, nnz = 1
 *   in  row_ptr[num_rows + 1] sorted_int(0, nnz)   # CSR offsets: 0 first, nnz last
 *   in  col_idx[nnz] int(0, num_rows - 1)          # columns in range (the matrix is square)
 *   in  values[nnz] uniform(-1, 1)
 *   in  x[num_rows] uniform(-1, 1)
 *   # random offsets make rows of up to a few hundred nonzeros (16 on average)
 *   out y[num_rows] tol(atol = 1e-4, rtol = 1e-5)
 *   flops 2 * nnz
 */
__global__ void spmv_csr_kernel(int num_rows, const int* __restrict__ row_ptr,
                                const int* __restrict__ col_idx,
                                const float* __restrict__ values, const float* __restrict__ x,
                                float* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float dot = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) dot += values[j] * x[col_idx[j]];
        y[row] = dot;
    }
}

void launch_spmv_csr(int num_rows, const int* d_row_ptr, const int* d_col_idx,
                     const float* d_values, const float* d_x, float* d_y) {
    spmv_csr_kernel<<<(num_rows + 127) / 128, 128>>>(num_rows, d_row_ptr, d_col_idx, d_values,
                                                     d_x, d_y);
}

int main(int argc, char** argv) {
    // At most 32 nonzeros per row: 2^25 rows keep nnz inside int.
    const int num_rows = static_cast<int>(app::arg_size(argc, argv, 1, size_t(1) << 21, 1 << 25));
    const int num_cols = num_rows;

    // Random CSR matrix, columns sorted and unique within a row as most CSR
    // producers emit them.
    std::vector<int> row_ptr(num_rows + 1), col_idx;
    col_idx.reserve(size_t(num_rows) * 16);
    app::Rng rng(101);
    std::vector<int> cols_in_row;
    row_ptr[0] = 0;
    for (int r = 0; r < num_rows; ++r) {
        const int len = static_cast<int>(rng.uniform_int(0, 32));
        cols_in_row.clear();
        for (int k = 0; k < len; ++k)
            cols_in_row.push_back(static_cast<int>(rng.uniform_int(0, num_cols - 1)));
        std::sort(cols_in_row.begin(), cols_in_row.end());
        cols_in_row.erase(std::unique(cols_in_row.begin(), cols_in_row.end()), cols_in_row.end());
        col_idx.insert(col_idx.end(), cols_in_row.begin(), cols_in_row.end());
        row_ptr[r + 1] = static_cast<int>(col_idx.size());
    }
    const int nnz = row_ptr[num_rows];
    std::vector<float> values(nnz), x(num_cols);
    app::fill_uniform(values, -1.0f, 1.0f, 102);
    app::fill_uniform(x, -1.0f, 1.0f, 103);
    std::printf("spmv_csr: rows=%d cols=%d nnz=%d\n", num_rows, num_cols, nnz);

    int *d_row_ptr, *d_col_idx;
    float *d_values, *d_x, *d_y;
    CUDA_CHECK(cudaMalloc(&d_row_ptr, row_ptr.size() * sizeof(int)));
    // +1 keeps the allocations non-empty when a tiny matrix has no nonzeros.
    CUDA_CHECK(cudaMalloc(&d_col_idx, (nnz + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_values, (nnz + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_x, num_cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, num_rows * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d_row_ptr, row_ptr.data(), row_ptr.size() * sizeof(int),
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_col_idx, col_idx.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_values, values.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_x, x.data(), num_cols * sizeof(float), cudaMemcpyHostToDevice));
    // Garbage in y makes a skipped (e.g. empty) row show up.
    CUDA_CHECK(cudaMemset(d_y, 0xff, num_rows * sizeof(float)));

    launch_spmv_csr(num_rows, d_row_ptr, d_col_idx, d_values, d_x, d_y);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> y_gpu(num_rows);
    CUDA_CHECK(cudaMemcpy(y_gpu.data(), d_y, num_rows * sizeof(float), cudaMemcpyDeviceToHost));

    std::vector<double> y_ref(num_rows);
    for (int r = 0; r < num_rows; ++r) {
        double dot = 0.0;
        for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) dot += double(values[j]) * x[col_idx[j]];
        y_ref[r] = dot;
    }
    // At most 32 products of magnitude <= 1 per row.
    const app::CompareResult check =
        app::compare("y", y_ref.data(), y_gpu.data(), num_rows, 1e-5, 1e-5);

    const float ms = app::time_median_ms(
        0, [&] { launch_spmv_csr(num_rows, d_row_ptr, d_col_idx, d_values, d_x, d_y); });

    const int status = app::print_verdict("spmv_csr", {check});
    app::print_timing("spmv_csr", "spmv_csr_kernel", ms);
    CUDA_CHECK(cudaFree(d_row_ptr));
    CUDA_CHECK(cudaFree(d_col_idx));
    CUDA_CHECK(cudaFree(d_values));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    return status;
}
