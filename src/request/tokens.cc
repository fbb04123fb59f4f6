// SPDX-License-Identifier: Apache-2.0
#include "request/tokens.h"

#include "api/responses.h"

namespace synapse::request {

Result<std::string> run_tokenize(const ModelDirectory& models, std::string_view text,
                                 const api::RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const api::TokenizeRequest body, api::parse_tokenize_request(text, limits));
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(body.model));
  const tokenizer::Tokenizer& tok = *model->tokenizer;
  const std::vector<int32_t> ids =
      tok.encode(body.content, {.add_special = body.add_special, .parse_special = true});
  std::vector<api::TokenPiece> pieces;
  pieces.reserve(ids.size());
  for (int32_t id : ids) {
    std::string piece;
    if (body.with_pieces) {
      tok.append_token_bytes(id, {.render_special = false, .strip_leading_space = false}, piece);
    }
    pieces.push_back({id, std::move(piece)});
  }
  return api::tokenize_response(pieces, body.with_pieces);
}

Result<std::string> run_detokenize(const ModelDirectory& models, std::string_view text,
                                   const api::RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const api::DetokenizeRequest body,
                       api::parse_detokenize_request(text, limits));
  SYN_ASSIGN_OR_RETURN(const ModelHandle model, models.find(body.model));
  Result<std::string> decoded = model->tokenizer->decode(body.tokens);
  if (!decoded.ok()) {
    return Status(ErrorCode::kInvalidValue, decoded.status().message(),
                  ErrorWhere{.field = "tokens"});
  }
  return api::detokenize_response(*decoded);
}

}  // namespace synapse::request
