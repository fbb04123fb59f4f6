// SPDX-License-Identifier: Apache-2.0
#include "http/multipart.h"

#include "http/message.h"

namespace synapse::http {
namespace {

constexpr size_t kMaxParts = 64;
constexpr size_t kMaxPartHeadBytes = 8 << 10;
constexpr size_t kMaxBoundaryBytes = 70;  // RFC 2046 5.1.1

Status malformed(std::string message) {
  return Status(ErrorCode::kInvalidValue, "malformed multipart/form-data body: " + message,
                ErrorWhere{.field = "body"});
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `name` in "type; a=1; b=\"two\"" (quoted strings unescaped), or
// nullopt when absent or malformed.
std::optional<std::string> parameter(std::string_view header, std::string_view name) {
  size_t i = header.find(';');
  while (i != std::string_view::npos && i < header.size()) {
    ++i;  // past ';'
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    const size_t eq = header.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = trim(header.substr(i, eq - i));
    i = eq + 1;
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t')) ++i;
    std::string value;
    if (i < header.size() && header[i] == '"') {
      bool closed = false;
      for (++i; i < header.size(); ++i) {
        if (header[i] == '\\' && i + 1 < header.size()) {
          value.push_back(header[++i]);
        } else if (header[i] == '"') {
          closed = true;
          ++i;
          break;
        } else {
          value.push_back(header[i]);
        }
      }
      if (!closed) return std::nullopt;
    } else {
      const size_t semi = std::min(header.find(';', i), header.size());
      value = std::string(trim(header.substr(i, semi - i)));
      i = semi;
    }
    if (equals_ignore_case(key, name)) return value;
    i = header.find(';', i);
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> multipart_boundary(std::string_view content_type) {
  const std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  if (!equals_ignore_case(type, "multipart/form-data")) {
    return Status(ErrorCode::kInvalidValue, "expected a multipart/form-data body",
                  ErrorWhere{.field = "Content-Type"});
  }
  std::optional<std::string> boundary = parameter(content_type, "boundary");
  if (!boundary || boundary->empty() || boundary->size() > kMaxBoundaryBytes) {
    return Status(ErrorCode::kInvalidValue,
                  "multipart/form-data needs a boundary of 1 to 70 characters",
                  ErrorWhere{.field = "Content-Type"});
  }
  return *boundary;
}

Result<std::vector<FormPart>> parse_multipart_form(std::string_view content_type,
                                                   std::string_view body) {
  SYN_ASSIGN_OR_RETURN(const std::string boundary, multipart_boundary(content_type));
  const std::string delimiter = "--" + boundary;
  // The first delimiter may follow a preamble; later ones always follow a CRLF.
  size_t pos = body.starts_with(delimiter) ? 0 : body.find("\r\n" + delimiter);
  if (pos == std::string_view::npos) return malformed("no boundary line");
  if (pos != 0) pos += 2;
  std::vector<FormPart> parts;
  for (;;) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    // Transport padding, then CRLF.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return malformed("a boundary line must end in CRLF");
    pos += 2;
    if (parts.size() == kMaxParts) {
      return malformed("more than " + std::to_string(kMaxParts) + " parts");
    }
    const size_t head_end = body.find("\r\n\r\n", pos);
    const bool no_fields = body.substr(pos, 2) == "\r\n";
    if (!no_fields && (head_end == std::string_view::npos || head_end - pos > kMaxPartHeadBytes)) {
      return malformed("a part's header fields do not end");
    }
    FormPart part;
    bool has_disposition = false;
    const size_t content_start = no_fields ? pos + 2 : head_end + 4;
    for (std::string_view fields = no_fields ? "" : body.substr(pos, head_end - pos);
         !fields.empty();) {
      const size_t eol = fields.find("\r\n");
      const std::string_view line = fields.substr(0, eol);
      fields = eol == std::string_view::npos ? std::string_view() : fields.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) return malformed("a part's header field has no ':'");
      const std::string_view name = trim(line.substr(0, colon));
      const std::string_view value = trim(line.substr(colon + 1));
      if (equals_ignore_case(name, "Content-Disposition")) {
        if (!equals_ignore_case(trim(value.substr(0, value.find(';'))), "form-data")) {
          return malformed("a part's Content-Disposition must be form-data");
        }
        std::optional<std::string> field_name = parameter(value, "name");
        if (!field_name) return malformed("a part's Content-Disposition has no name");
        part.name = std::move(*field_name);
        part.filename = parameter(value, "filename").value_or("");
        has_disposition = true;
      } else if (equals_ignore_case(name, "Content-Type")) {
        part.content_type = std::string(value);
      }
    }
    if (!has_disposition) return malformed("a part has no Content-Disposition");
    const size_t next = body.find("\r\n" + delimiter, content_start);
    if (next == std::string_view::npos) return malformed("the last part has no closing boundary");
    part.content = body.substr(content_start, next - content_start);
    parts.push_back(std::move(part));
    pos = next + 2;
  }
}

}  // namespace synapse::http
