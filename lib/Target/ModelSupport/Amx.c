/*===- Amx.c - the AMX state a model's tile products need -----------------===*
 *
 * Linked into every model .so. Linux hands a process the (8 KiB) AMX tile
 * state only on request; an AMX instruction before it dies of SIGILL. A
 * model compiled with --precision bf16x3 asks once, when it loads and
 * before every run (the answer is kept), so that a machine or kernel
 * without AMX is a load error with a message.
 *
 *===----------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* From asm/prctl.h and the x86 XSAVE feature numbers. */
enum { kArchReqXcompPerm = 0x1023, kXfeatureXtileData = 18 };

void mcc_model_set_error(const char *message, const char *detail);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int refused;

static void request(void) {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) != 0) {
    refused = errno ? errno : EINVAL;
    mcc_model_set_error(
        "this model computes its products on AMX tiles (compiled with "
        "--precision bf16x3), and the OS refused AMX state to this process "
        "(a CPU without AMX, or Linux before 5.16): recompile without "
        "--precision bf16x3 to run here",
        strerror(refused));
  }
}

/* 0 when the process may use AMX, else non-zero (mcc_model_last_error
 * says why). Thread-safe; asks the kernel once. */
HIDDEN int mcc_amx_request(void) {
  pthread_once(&once, request);
  return refused;
}
