// SHA-256 (FIPS 180-4, computed by OpenSSL) of a byte buffer, as lowercase hex: the manifest's per-file checksum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kvaudit::io {

// Lowercase hex digest (64 characters) of `bytes`.
std::string sha256_hex(std::span<const std::uint8_t> bytes);

}  // namespace kvaudit::io
