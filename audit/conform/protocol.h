// The `kvaudit conform` wire protocol: one JSON request per line to the implementation, one JSON response back.
//
// Request  {"id": 7, "method": "eg-chunkkv", "scores": [[...T floats...], ...heads], "compression_ratio": 0.9,
//           "chunk_length": 10, "rescue_size": 4, "entropy_threshold": null}
// Response {"id": 7, "kept": [0, 1, 5, ...]}        one selection shared by every head
//          {"id": 7, "kept": [[...], [...], ...]}    one selection per head (kvpress ChunkKV's fallback)
// Scores are float32 values printed as the shortest decimal that parses back to the same double, so a
// float64 reader sees exactly the float32 value and a float32 reader recovers it bit for bit (docs/conform.md).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/conform/conform_case.h"

namespace kvaudit::conform {

// Why no usable answer came back. Each kind is reported under its own name; none is ever a pass.
enum class ProtocolErrorKind { SpawnFailed, Crashed, Timeout, BadJson, WrongId, BadResponse };

const char* to_string(ProtocolErrorKind kind);

class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(ProtocolErrorKind kind, const std::string& message)
      : std::runtime_error(std::string(to_string(kind)) + ": " + message), kind_(kind) {}
  ProtocolErrorKind kind() const { return kind_; }

 private:
  ProtocolErrorKind kind_;
};

// Parses "chunkkv" / "eg-chunkkv" (method_from_name, core/types.h); throws InputError naming `source`.
Method parse_method(const std::string& text, const std::string& source);

// The ratio's decimal text rewritten as a valid JSON number with the same exact value (".9" -> "0.9").
std::string json_decimal(const std::string& ratio_text);

// One request line, without the trailing newline. Throws InputError if a score is not finite (JSON has no
// NaN or infinity; the oracle rejects them anyway).
std::string encode_request(std::int64_t id, const ConformCase& c);

// How `--replay` reads request scores that are not float32 values. Round: to the nearest float32 (ties to even)
// of the double the JSON number parses to, the count and an example noted in the case's origin; Strict
// (--replay-strict): refused with an InputError naming the value. Either way a value beyond float32's range is
// refused.
enum class Float32Input { Round, Strict };
const char* to_string(Float32Input mode);

// One replayed value read as float32 under `mode`, for every family's request reader. `rounded` counts the values
// that were not float32 values and keeps the first as an example ("0.1 -> 0.10000000149011612"); note() is the text
// the case's origin carries. Throws InputError(source, field, ...) showing the value: not a number, not finite, or
// rounding past float32's largest finite value (3.4028235e38 plus half an ulp or more), or (Strict) not a float32
// value.
struct Float32Rounding {
  int rounded = 0;
  std::string example;
  // " (N <noun>s rounded to the nearest float32, e.g. ...)", or "" when none was.
  std::string note(const std::string& noun) const;
};
float replay_float32(const nlohmann::json& value, Float32Input mode, const std::string& source, const char* field,
                     Float32Rounding& rounding);

// Reads a request line back (for `--replay`); the inverse of encode_request. Throws InputError naming the field
// and showing the offending value.
ConformCase decode_request(const std::string& line, Flavour flavour, const std::string& source,
                           Float32Input scores = Float32Input::Round);

// A request's "compression_ratio" (every method): decimal text ("0.75") or a JSON number (0.75, 7.5e-1), read
// exactly from the line as written. Throws InputError showing the value unless it is a decimal in [0, 1).
CompressionRatio ratio_field(const std::string& line, const nlohmann::json& request, const std::string& source);

// A JSON number's text as a plain decimal with the same exact value ("7.5e-1" -> "0.75", "-5E-1" -> "-0.5"); text
// that is not a JSON number (or whose exponent exceeds 4096 in magnitude) comes back unchanged.
std::string plain_decimal(const std::string& number);

// Parses one response line. Throws ProtocolError (BadJson, WrongId, BadResponse); never judges the positions
// themselves: range, uniqueness and order are the oracle's rules, so unsorted or duplicate answers pass here.
Selection decode_response(const std::string& line, std::int64_t expected_id);

// A request line (a replay file's) parsed as a JSON object; InputError(source, "request", ...) otherwise.
nlohmann::json parse_request_object(const std::string& line, const std::string& source);

// The envelope every method's response shares: `line` parsed as a JSON object whose integer "id" is
// `expected_id`. Throws ProtocolError (bad-json, bad-response, wrong-id) otherwise.
nlohmann::json parse_response_envelope(const std::string& line, std::int64_t expected_id);

// A line or value as messages quote it: at most 200 characters.
std::string clip(const std::string& line);

}  // namespace kvaudit::conform
