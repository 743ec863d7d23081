/* kernels/device_names.h — the device runner's own names in the build that includes it: kernels/device.cu is built
 * twice, by nvcc for a CUDA device (kernels_cuda_*; kernels/device_none.c stands in for it without CUDA) and by the
 * C++ compiler for the simulated device (kernels_sim_*, under KERNELS_SIM: kernels/sim_runner.cc). kernels/devsel.c
 * gives the kernels_device_* API of kernels.h, passing each call to the runner the device was opened on. Private to
 * the kernels module. */
#ifndef FUSECHECK_KERNELS_DEVICE_NAMES_H
#define FUSECHECK_KERNELS_DEVICE_NAMES_H

#ifdef KERNELS_SIM
#define KD_NAME(n) kernels_sim_##n
#else
#define KD_NAME(n) kernels_cuda_##n
#endif

#define kernels_device KD_NAME(device)
#define kernels_device_built KD_NAME(built)
#define kernels_device_archs KD_NAME(archs)
#define kernels_device_count KD_NAME(count)
#define kernels_device_open KD_NAME(open)
#define kernels_device_close KD_NAME(close)
#define kernels_device_backend KD_NAME(backend)
#define kernels_device_prepare KD_NAME(prepare)
#define kernels_device_plant_fault KD_NAME(plant_fault)
#define kernels_device_launch KD_NAME(launch)
#define kernels_device_seconds KD_NAME(seconds)
#define kernels_device_forget KD_NAME(forget)
#define kernels_device_step KD_NAME(step)
#define kernels_device_use_graphs KD_NAME(use_graphs)
#define kernels_device_release KD_NAME(release)
#define kernels_device_stats_get KD_NAME(stats_get)

#endif
