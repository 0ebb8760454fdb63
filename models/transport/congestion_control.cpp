#include "models/transport/congestion_control.hpp"

namespace fabricsim {

namespace {

class NoCongestionControl final : public CongestionControl {
 public:
  Needs needs() const override { return {}; }
  std::uint32_t open(std::uint64_t) override { return 0; }
};

}  // namespace

const CcAlgorithm kNoCongestionControl{
    "none", [](const RdmaConfig&, CcHost&, double) -> std::unique_ptr<CongestionControl> {
      return std::make_unique<NoCongestionControl>();
    }};

}  // namespace fabricsim
