/* SPDX-License-Identifier: Apache-2.0 */
// Policy modules (mlos_training_request_policy, _release_policy,
// _get_advice) for Python. Names and configs arrive as str (the package
// refuses NUL bytes and serialises the config with json.dumps first); the
// calls talk to mlosd, so the GIL is released around them.
#pragma once

#include <nanobind/nanobind.h>

namespace mlos_python {

void bind_policies(nanobind::module_& m);

}  // namespace mlos_python
