/* SPDX-License-Identifier: ISC */
/* CPU feature probes. */
#include "platform.h"

#include "ph_config.h"

#if defined(__aarch64__) && defined(HAVE_GETAUXVAL)
#include <sys/auxv.h>
#ifndef HWCAP_AES
#define HWCAP_AES (1 << 3)
#endif
#endif

int
ph_cpu_has_aes(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	return __builtin_cpu_supports("aes") ? 1 : 0;
#elif defined(__aarch64__) && (defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO))
	return 1; /* built for CPUs that all have it (Apple's arm64) */
#elif defined(__aarch64__) && defined(HAVE_GETAUXVAL)
	return (getauxval(AT_HWCAP) & HWCAP_AES) ? 1 : 0;
#else
	return 0;
#endif
}
