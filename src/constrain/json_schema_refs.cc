// SPDX-License-Identifier: Apache-2.0
// $id, $anchor and $ref: which schema of the document a reference names, and that schema's
// node, built once. Remote documents are never fetched: a reference outside the document is
// unsupported_schema.
#include <cctype>
#include <string>
#include <tuple>
#include <utility>

#include "constrain/json_schema_internal.h"

namespace synapse::constrain::json_schema_internal {
namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_scheme(const std::string& uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(uri[0]))) return false;
  for (size_t i = 0; i < colon; ++i) {
    const char c = uri[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

std::string strip_fragment(const std::string& uri) { return uri.substr(0, uri.find('#')); }

// RFC 3986 reference resolution, enough for the $id/$ref pairs schemas use: absolute
// references, network-path, absolute-path and relative-path ones (no dot-segment cleanup
// beyond a leading "./").
std::string resolve_uri(const std::string& base_with_fragment, std::string ref) {
  const std::string base = strip_fragment(base_with_fragment);
  if (has_scheme(ref) || base.empty()) return ref;
  if (ref.empty()) return base;
  const size_t scheme_end = base.find(':');
  if (ref.rfind("//", 0) == 0) return base.substr(0, scheme_end + 1) + ref;
  size_t path_begin = scheme_end + 1;
  if (base.compare(path_begin, 2, "//") == 0) {
    path_begin = base.find('/', path_begin + 2);
    if (path_begin == std::string::npos) path_begin = base.size();
  }
  if (ref[0] == '/') return base.substr(0, path_begin) + ref;
  while (ref.rfind("./", 0) == 0) ref = ref.substr(2);
  const size_t slash = base.rfind('/');
  if (slash == std::string::npos || slash < path_begin)
    return base.substr(0, path_begin) + "/" + ref;
  return base.substr(0, slash + 1) + ref;
}

}  // namespace

void SchemaCompiler::index_document() {
  base_uri_[""] = "";
  if (root_.is_object()) {
    for (const char* key : {"$id", "id"}) {
      auto it = root_.find(key);
      if (it != root_.end() && it->is_string() && !it->get<std::string>().empty() &&
          it->get<std::string>()[0] != '#') {
        base_uri_[""] = strip_fragment(it->get<std::string>());
        break;
      }
    }
  }
  index_resources(root_, "", base_uri_[""], "");
  if (!base_uri_[""].empty()) ids_[base_uri_[""]] = "";
}

void SchemaCompiler::index_resources(const Json& s, const std::string& pointer,
                                     const std::string& base, const std::string& resource) {
  // Past kMaxNesting, build() refuses the schema anyway; stop before the stack runs out.
  const Nesting nesting(*this);
  if (!s.is_object() || nesting_ > kMaxNesting) return;
  std::string new_base = base;
  std::string new_resource = resource;
  const bool ids_apply = !(legacy_ref_ && s.contains("$ref"));
  for (const char* key : {"$id", "id"}) {
    auto it = s.find(key);
    if (!ids_apply || it == s.end() || !it->is_string()) continue;
    const std::string& id = it->get_ref<const std::string&>();
    if (!id.empty() && id[0] == '#') {
      anchors_.emplace(resource + "#" + id.substr(1), pointer);
    } else if (!id.empty()) {
      new_base = strip_fragment(resolve_uri(base, id));
      new_resource = pointer;
      ids_.emplace(new_base, pointer);
      base_uri_[pointer] = new_base;
    }
    break;
  }
  if (auto it = s.find("$anchor"); it != s.end() && it->is_string()) {
    anchors_.emplace(new_resource + "#" + it->get<std::string>(), pointer);
  }
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string p = child(pointer, key);
    if (key == "properties" || key == "patternProperties" || key == "$defs" ||
        key == "definitions" || key == "dependentSchemas" || key == "dependencies") {
      if (!v.is_object()) continue;
      for (auto jt = v.begin(); jt != v.end(); ++jt) {
        index_resources(jt.value(), child(p, jt.key()), new_base, new_resource);
      }
    } else if (key == "items" || key == "prefixItems" || key == "allOf" || key == "anyOf" ||
               key == "oneOf") {
      if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i)
          index_resources(v[i], child(p, i), new_base, new_resource);
      } else {
        index_resources(v, p, new_base, new_resource);
      }
    } else if (key == "additionalProperties" || key == "additionalItems" || key == "not" ||
               key == "if" || key == "then" || key == "else" || key == "contains" ||
               key == "propertyNames" || key == "unevaluatedProperties" ||
               key == "unevaluatedItems") {
      index_resources(v, p, new_base, new_resource);
    }
  }
}

Result<std::string> SchemaCompiler::resolve_ref(const std::string& ref, const std::string& resource,
                                                const std::string& pointer) {
  const size_t hash = ref.find('#');
  const std::string uri = ref.substr(0, hash);
  const std::string fragment =
      hash == std::string::npos ? "" : percent_decode(ref.substr(hash + 1));
  std::string target_resource = resource;
  if (!uri.empty()) {
    auto base = base_uri_.find(resource);
    const std::string absolute =
        strip_fragment(resolve_uri(base == base_uri_.end() ? "" : base->second, uri));
    auto it = ids_.find(absolute);
    if (it == ids_.end()) {
      return unsupported(pointer, "$ref '" + ref +
                                      "' is not in this document (remote refs are "
                                      "not fetched)");
    }
    target_resource = it->second;
  }
  std::string target = target_resource;
  if (!fragment.empty() && fragment[0] == '/') {
    target += fragment;
  } else if (!fragment.empty()) {
    auto it = anchors_.find(target_resource + "#" + fragment);
    if (it == anchors_.end()) return unsupported(pointer, "$ref anchor '" + ref + "' not found");
    target = it->second;
  }
  // Walks a pointer: the node it names (null when there is none) and its canonical spelling.
  const auto walk = [this](const std::string& path) -> std::pair<const Json*, std::string> {
    const Json* node = &root_;
    std::string canonical;
    size_t pos = 0;
    while (pos < path.size()) {
      const size_t next = path.find('/', pos + 1);
      std::string token =
          path.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      pos = next == std::string::npos ? path.size() : next;
      std::string unescaped;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() &&
            (token[i + 1] == '0' || token[i + 1] == '1')) {
          unescaped += token[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          unescaped += token[i];
        }
      }
      if (node->is_object()) {
        auto it = node->find(unescaped);
        if (it == node->end()) return {nullptr, ""};
        node = &*it;
      } else if (node->is_array() && !unescaped.empty() &&
                 unescaped.find_first_not_of("0123456789") == std::string::npos &&
                 unescaped.size() < 10 && std::stoul(unescaped) < node->size()) {
        node = &(*node)[std::stoul(unescaped)];
      } else {
        return {nullptr, ""};
      }
      canonical = child(canonical, unescaped);
    }
    return {node, canonical};
  };
  auto [node, canonical] = walk(target);
  if (node == nullptr && uri.empty() && !target_resource.empty() && !fragment.empty() &&
      fragment[0] == '/') {
    // Many schemas give subschemas an `id` ("/source", "path") yet write their references
    // from the document root; resolved strictly those point nowhere, so try the root.
    std::tie(node, canonical) = walk(fragment);
  }
  if (node == nullptr) return invalid(pointer, "$ref '" + ref + "' points to nothing");
  auto [it, inserted] = refs_.try_emplace(canonical);
  if (inserted) {
    it->second.schema = node;
    // The target's resource is the innermost schema with an $id that encloses it.
    std::string best;
    for (const auto& [res, unused] : base_uri_) {
      if ((canonical == res || canonical.rfind(res + "/", 0) == 0) && res.size() >= best.size()) {
        best = res;
      }
    }
    it->second.resource = best;
  }
  return canonical;
}

Result<NodePtr> SchemaCompiler::deref(const Node& ref_node) {
  auto it = refs_.find(ref_node.ref);
  SYN_CHECK(it != refs_.end(), "kRef node without a registered target");
  RefTarget& target = it->second;
  if (target.node) return target.node;
  if (target.building) {
    return unsupported(ref_node.ref,
                       "recursive $ref combined with other keywords (allOf, not, "
                       "siblings) cannot be merged");
  }
  target.building = true;
  Result<NodePtr> built = any_;
  if (target.schema != nullptr) {
    built = build(*target.schema, ref_node.ref, target.resource);
  } else {
    // A combination: fold its literals. `target` stays valid (refs_ is a std::map).
    const std::vector<std::string> literals = target.literals;
    const std::string pointer = target.pointer;
    NodePtr acc = any_;
    for (const std::string& literal : literals) {
      const bool complement = literal[0] == '!';
      Node base;
      base.kind = NodeKind::kRef;
      base.ref = complement ? literal.substr(1) : literal;
      built = deref(base);
      if (!built.ok()) break;
      if (complement) {
        built = negate(*built, pointer);
        if (!built.ok()) break;
      }
      built = intersect(acc, *built);
      if (!built.ok()) break;
      acc = *built;
    }
  }
  // refs_ is a std::map: `target` stays valid across the insertions build() makes.
  target.building = false;
  if (!built.ok()) return built;
  target.node = *built;
  return target.node;
}

}  // namespace synapse::constrain::json_schema_internal
