/* SPDX-License-Identifier: Apache-2.0 */
// Lists written as "a,b,c" (CUDA_VISIBLE_DEVICES, MLOS_GPUS, policy names in
// the environment): split with each item trimmed of spaces and empty items
// dropped, and joined back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlos {

std::vector<std::string> split_comma_list(std::string_view text);
std::string join_comma_list(const std::vector<std::string>& items);

}  // namespace mlos
