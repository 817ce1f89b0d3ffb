// What the driver probes share (capture_probe.cu, context_free_probe.cu).
#pragma once
#include <cuda.h>
#include <string>

// The name of a CUresult ("CUDA_ERROR_INVALID_CONTEXT"), or "?".
static std::string cu_name(CUresult r) {
    const char *s = nullptr;
    cuGetErrorName(r, &s);
    return s ? s : "?";
}
