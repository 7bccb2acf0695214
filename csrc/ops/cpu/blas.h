/* blas.h: the BLAS library the cpu device's float32 and float64 matrix products call: OpenBLAS from the
 * scipy-openblas32 wheel (the build NumPy and SciPy use), opened with dlopen on the first product, so that
 * vkt's wheel links no BLAS and imports without one. */
#ifndef VKT_CPU_BLAS_H
#define VKT_CPU_BLAS_H

/* The shared library to open (the bindings find it at import); without one, or where it fails to open,
 * products take the blocked C kernel. The path is copied. */
void vkt_cpu_blas_set_library(const char *path);
/* "OpenBLAS ..." configuration of the library in use, or NULL where products take the C kernel. */
const char *vkt_cpu_blas_config(void);

#endif
