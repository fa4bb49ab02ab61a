// cuBLASLt for the bf16 GEMMs (lt_gemm.h): one plan per shape, alignment and output dtype, its
// algorithm the heuristic's first (or, for M in (8, 512), the next power of two's).
#include "backend/cuda/lt_gemm.h"

#include <string>

#include "core/check.h"

namespace tessera::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::internal, std::string("cuBLASLt ") + what + " failed with status " +
                                         std::to_string(static_cast<int>(s)));
}

}  // namespace

int alignment_of(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int al = 256;
  while (al > 1 && a % al) al >>= 1;
  return al;
}

LtGemm::LtGemm() {
  check_lt(cublasLtCreate(&handle_), "create");
  workspace_ = std::make_unique<CudaBuffer>(kWorkspaceBytes, "cuBLASLt workspace");
}

LtGemm::~LtGemm() {
  for (auto& [k, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  if (handle_) cublasLtDestroy(handle_);
}

LtGemm::Plan& LtGemm::plan(int64_t M, int64_t N, int64_t K, int64_t ldx, int64_t ldo, DType out_dt,
                           int al_w, int al_x, int al_o) {
  Key key{M, N, K, ldx, ldo, static_cast<int>(out_dt), al_w, al_x, al_o};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  Plan p;
  check_lt(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  // Column-major view: D^T[N, M] = W[K, N]^T (op T) * X^T[K, M].
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "transa");
  check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "transb");
  const cudaDataType_t odt = out_dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  check_lt(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, K, N, K), "layout a");
  check_lt(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, K, M, ldx), "layout b");
  check_lt(cublasLtMatrixLayoutCreate(&p.c, odt, N, M, ldo), "layout c");
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "pref");
  const uint64_t ws = kWorkspaceBytes;
  const uint32_t aw = al_w, ax = al_x, ao = al_o;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw,
                                       sizeof aw);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ax,
                                       sizeof ax);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ao,
                                       sizeof ao);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t s = CUBLAS_STATUS_NOT_SUPPORTED;
  // M in (8, 512) and not a power of two: the algorithm picked for the next power of two, if it
  // runs this shape. cuBLASLt loads a kernel the first time it runs it (milliseconds per linear
  // shape), so a prompt of a new length would pay that in its time to first token; the engine's
  // warm-up runs the powers of two.
  if (M > 8 && M < 512 && (M & (M - 1)) != 0) {
    int64_t mb = 16;
    while (mb < M) mb *= 2;
    const cublasLtMatmulAlgo_t algo = plan(mb, N, K, ldx, ldo, out_dt, al_w, al_x, al_o).algo;
    if (cublasLtMatmulAlgoCheck(handle_, p.op, p.a, p.b, p.c, p.c, &algo, &res) ==
            CUBLAS_STATUS_SUCCESS &&
        res.workspaceSize <= kWorkspaceBytes) {
      res.algo = algo;
      s = CUBLAS_STATUS_SUCCESS;
      found = 1;
    }
  }
  if (found == 0)
    s = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
    throw Error(ErrorKind::internal, "cuBLASLt found no algorithm for a " + std::to_string(M) +
                                         "x" + std::to_string(N) + "x" + std::to_string(K) +
                                         " GEMM");
  }
  p.algo = res.algo;
  return plans_.emplace(key, p).first->second;
}

void LtGemm::matmul(Tensor x, const void* w, int64_t N, int64_t K, Tensor out, cudaStream_t st) {
  const int64_t M = x.rows;
  Plan& p = plan(M, N, K, x.stride, out.stride, out.dtype, alignment_of(w), alignment_of(x.data),
                 alignment_of(out.data));
  const float alpha = 1.f, beta = 0.f;
  check_lt(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x.data, p.b, &beta, out.data, p.c,
                          out.data, p.c, &p.algo, workspace_->data(), kWorkspaceBytes, st),
           "matmul");
}

}  // namespace tessera::cuda
