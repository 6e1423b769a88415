/*
 * The C side of the va_list test (va_list.rs): variadic calls compiled by a C compiler for
 * the target, whose va_list reaches a provider's handle_extendedop_func the way OFA libdat2
 * hands it over. Built as a shared object and loaded by the test with dlopen.
 *
 * The consumer's calls are the dat_ib_post_* macros of dat_ib_extensions.h, which expand
 * to dat_extension_op(ep, op, ...). libdat2's dat_extension_op starts a va_list after the
 * operation and passes it, as it is, to the handle_extendedop_func of the handle's
 * provider; the one here does the same with the function the test installs.
 */
#define DAT_EXTENSIONS 1
#include <netinet/in.h> /* dat_ib_extensions.h needs struct sockaddr_in6 */
#include <stdarg.h>
#include <stdint.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

typedef DAT_RETURN (*extendedop_func)(DAT_HANDLE, DAT_EXTENDED_OP, va_list);

static extendedop_func provider;

void va_caller_set_provider(extendedop_func f)
{
    provider = f;
}

DAT_RETURN dat_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP op, ...)
{
    va_list args;
    DAT_RETURN status;

    va_start(args, op);
    status = provider(handle, op, args);
    va_end(args);
    return status;
}

static DAT_DTO_COOKIE cookie_of(uint64_t v)
{
    DAT_DTO_COOKIE c;

    c.as_64 = v;
    return c;
}

/* The three operations, with the caller's values, through the header's macros. */

DAT_RETURN va_caller_rdma_write_immed(DAT_EP_HANDLE ep, DAT_COUNT count, DAT_LMR_TRIPLET *lmr,
                                      uint64_t cookie, DAT_RMR_TRIPLET *rmr,
                                      DAT_UINT32 immediate, DAT_COMPLETION_FLAGS flags)
{
    return dat_ib_post_rdma_write_immed(ep, count, lmr, cookie_of(cookie), rmr, immediate,
                                        flags);
}

DAT_RETURN va_caller_cmp_and_swap(DAT_EP_HANDLE ep, DAT_UINT64 compare, DAT_UINT64 swap,
                                  DAT_LMR_TRIPLET *lmr, uint64_t cookie, DAT_RMR_TRIPLET *rmr,
                                  DAT_COMPLETION_FLAGS flags)
{
    return dat_ib_post_cmp_and_swap(ep, compare, swap, lmr, cookie_of(cookie), rmr, flags);
}

DAT_RETURN va_caller_fetch_and_add(DAT_EP_HANDLE ep, DAT_UINT64 add, DAT_LMR_TRIPLET *lmr,
                                   uint64_t cookie, DAT_RMR_TRIPLET *rmr,
                                   DAT_COMPLETION_FLAGS flags)
{
    return dat_ib_post_fetch_and_add(ep, add, lmr, cookie_of(cookie), rmr, flags);
}

/*
 * Twelve arguments after the operation, of each kind the operations pass, in this order
 * twice: a 64-bit value, a DAT_COUNT, a pointer, a DAT_UINT32, a cookie, completion flags.
 * Registers hold 4 of them on x86_64 (6 minus handle and op) and 6 on aarch64 (8 minus
 * two); the rest are on the stack. The test's provider reads `op` slots into `handle`.
 */
DAT_RETURN va_caller_twelve(uint64_t *out, const uint64_t v[12])
{
    return dat_extension_op(out, 12,
                            v[0], (DAT_COUNT)v[1], (DAT_PVOID)(uintptr_t)v[2],
                            (DAT_UINT32)v[3], cookie_of(v[4]), (DAT_COMPLETION_FLAGS)v[5],
                            v[6], (DAT_COUNT)v[7], (DAT_PVOID)(uintptr_t)v[8],
                            (DAT_UINT32)v[9], cookie_of(v[10]), (DAT_COMPLETION_FLAGS)v[11]);
}

/*
 * Eight named integer parameters fill every argument register of both ABIs, so va_start
 * finds none left: every variadic argument comes from the stack from the first one on.
 */
static DAT_RETURN eight_named(DAT_HANDLE handle, DAT_EXTENDED_OP op, long a2, long a3, long a4,
                              long a5, long a6, long a7, ...)
{
    va_list args;
    DAT_RETURN status;

    if (a2 != 2 || a3 != 3 || a4 != 4 || a5 != 5 || a6 != 6 || a7 != 7)
        return DAT_INTERNAL_ERROR;
    va_start(args, a7);
    status = provider(handle, op, args);
    va_end(args);
    return status;
}

/* Six arguments of the kinds above, all on the stack. */
DAT_RETURN va_caller_stack_only(uint64_t *out, const uint64_t v[6])
{
    return eight_named(out, 6, 2, 3, 4, 5, 6, 7,
                       v[0], (DAT_COUNT)v[1], (DAT_PVOID)(uintptr_t)v[2],
                       (DAT_UINT32)v[3], cookie_of(v[4]), (DAT_COMPLETION_FLAGS)v[5]);
}
