#pragma once
// The input readers as a fuzzer drives them: each entry takes a file's bytes, reads them as shardsim reads that kind
// of file, and goes on as far as a user's command would (a scenario is evaluated). Bad input must end in a
// core::ConfigError (exit 2 on the command line), which the entry catches; anything else — another exception, a
// crash, a sanitizer report, a hang — is a finding. The libFuzzer targets (`make fuzz`) call them, and the test
// FuzzCorpus replays the seed corpora and every kept regression input through them in the ordinary build.
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::fuzz {

struct Target {
  std::string name;                 ///< fuzz_<name> is its libFuzzer binary
  void (*entry)(const std::string&);
  std::vector<std::string> seeds;   ///< folders (relative to the source tree) whose files seed its corpus
};

void scenario_yaml(const std::string& text);
void deepspeed_config(const std::string& text);
void hf_config(const std::string& text);
void calibration(const std::string& text);
void validation_set(const std::string& text);
void nccl_tests(const std::string& text);
void npy_sample(const std::string& bytes);

const std::vector<Target>& targets();
const Target* find_target(std::string_view name);

}  // namespace shardsim::fuzz
