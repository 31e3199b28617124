#pragma once
// HdrHistogram's interchange form: the V2 encoding (a 40-byte header, then the counts as
// ZigZag LEB128 varints, a run of empty buckets as one negative count), deflated with zlib
// behind an 8-byte header (cookie 0x1c849314), in base64: the "HISTFAAA..." text HdrHistogram's
// Java, C, Go and Python libraries decode, and the lines of its interval logs. rig's histogram
// has HdrHistogram's layout (lowest discernible value 1, 3 significant digits, highest
// trackable 1 h in ns), so its buckets are written as they are: values are nanoseconds.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/histogram.hpp"

namespace rig {

std::string hdr_encode(const histogram& h);  // base64 of the compressed V2 encoding
// Back (what hdr_encode wrote, or any V2 encoding with rig's layout); nullopt with `why` when
// it is not one.
std::optional<histogram> hdr_decode(std::string_view base64, std::string* why = nullptr);

// HdrHistogram's interval log (format 1.3, what HistogramLogProcessor reads): the header with
// the start time (seconds since the epoch) as StartTime and BaseTime, so each interval's
// timestamp is seconds from it; then a line per interval with its max in milliseconds.
std::string hdr_log_header(double start_epoch_s, const std::string& comment);
// An interval's line: its start and length in seconds, its max (us; written in ms, as the format
// has it) and its histogram as hdr_encode wrote it.
std::string hdr_log_line(double start_s, double length_s, double max_us, const std::string& encoded);

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace rig
