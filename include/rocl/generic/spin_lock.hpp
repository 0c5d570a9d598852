// spin_lock.hpp - the default lock of generic::Communicator, rocl's
// platform SpinLock (rocl/platform/locks.hpp): critical sections of a few
// dozen instructions, where parking a thread in the kernel would cost far
// more than the work it protects.
#pragma once

#include "rocl/platform/locks.hpp"

namespace rocl::generic {

using SpinLock = platform::SpinLock;

}  // namespace rocl::generic
