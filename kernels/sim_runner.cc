/* kernels/sim_runner.cc — the simulated device's runner: kernels/device.cu and the kernels it takes in
 * (kernels/kernels.cu), the very sources nvcc builds, compiled by the C++ compiler against kernels/sim_cuda.h. Its
 * entries are kernels_sim_* (kernels/device_names.h); the kernels and the runner's own functions live in a namespace
 * of their own, apart from the CUDA build's host stubs of the same kernels. */
#include "sim_cuda.h"

#include "device_names.h"

namespace fusecheck_sim {

#include "device.cu"

/* The simulated device's rows are kept under the backend "sim". */
extern "C" void kernels_sim_name(struct kernels_device *D) { snprintf(D->backend, sizeof D->backend, "sim"); }

} /* namespace fusecheck_sim */
