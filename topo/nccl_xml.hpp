#pragma once
// NCCL topology XML (the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format): export a server model
// and import a dump back into one.
//
// Structure: <system version="1"> > <cpu numaid=..> > <pci> (bridges, class 0x0604xx, nested)
// > <pci> of a device > <gpu dev sm rank gdr> with <nvlink target count tclass> children, or
// <nic> > <net name dev speed port ...>. An NVLink whose target has tclass 0x068000 goes to an
// NVSwitch; a GPU class target is a direct link to that GPU.
//
// Mapping to ServerSpec: each bridge directly under a CPU is a PCIe switch; a device with a
// second bridge between it and that switch makes the switch two-level (PXB); a device straight
// under the CPU is on the root complex. Speeds: net speed is Mb/s; link_speed "16.0 GT/s PCIe"
// gives the PCIe generation.

#include <string>
#include <string_view>

#include "topo/server.hpp"

namespace fabricsim {

std::string export_nccl_xml(const ServerSpec& spec);
// Throws std::invalid_argument naming what is wrong (not XML, no <system>, a GPU without dev).
ServerSpec import_nccl_xml(std::string_view xml, const ServerSpec& defaults);

}  // namespace fabricsim
