/* refuse_amx.c: an LD_PRELOAD shim that makes the kernel's answer to
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) a refusal (EINVAL),
 * as on a CPU without AMX or a Linux before 5.16, and passes every other
 * syscall() through. For testing how a model compiled with --precision
 * bf16x3 fails to load there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  long a[6];
  for (int i = 0; i < 6; ++i)
    a[i] = va_arg(args, long);
  va_end(args);
  if (number == SYS_arch_prctl && a[0] == 0x1023) {
    errno = EINVAL;
    return -1;
  }
  long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
