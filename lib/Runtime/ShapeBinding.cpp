//===- ShapeBinding.cpp - dynamic dims of a model's signature -------------===//

#include "ShapeBinding.h"

#include <cctype>
#include <cstring>

namespace mcc::rt {

std::string shapeString(int64_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int64_t i = 0; i < rank; ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

/// Recursive descent over the grammar
///   expr  := term (('+' | '-') term)*
///   term  := unary (('*' | 'floordiv' | 'ceildiv' | 'mod') unary)*
///   unary := '-' unary | INT | sK | '(' expr ')'
/// which is how MLIR's affine parser ranks the operators.
class DimExprParser {
public:
  DimExprParser(std::string_view text, size_t numSymbols, DimExpr &out)
      : text(text), numSymbols(numSymbols), out(out) {}

  bool run(std::string &error) {
    out.nodes.clear();
    out.source = std::string(text);
    next();
    if (!expr(0) || !expect(Tok::End, "the end"))
      return report(error);
    return true;
  }

private:
  enum class Tok {
    End,
    Int,
    Symbol,
    Plus,
    Minus,
    Star,
    FloorDiv,
    CeilDiv,
    Mod,
    LParen,
    RParen,
    Bad
  };
  // Deep enough for any expression MLIR prints for a dim, and far from
  // exhausting the stack on a hostile string.
  static constexpr int kMaxDepth = 64;

  void next() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
    tokStart = pos;
    if (pos == text.size()) {
      tok = Tok::End;
      return;
    }
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      value = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, text[pos] - '0', &value)) {
          tok = Tok::Bad;
          badWhy = "integer too large";
          return;
        }
        ++pos;
      }
      tok = Tok::Int;
      return;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      std::string_view word = text.substr(start, pos - start);
      if (word == "floordiv")
        tok = Tok::FloorDiv;
      else if (word == "ceildiv")
        tok = Tok::CeilDiv;
      else if (word == "mod")
        tok = Tok::Mod;
      else if (word.size() >= 2 && word[0] == 's' &&
               word.find_first_not_of("0123456789", 1) ==
                   std::string_view::npos &&
               word.size() <= 10) {
        value = std::stoll(std::string(word.substr(1)));
        if (static_cast<uint64_t>(value) >= numSymbols) {
          tok = Tok::Bad;
          badWhy = "symbol " + std::string(word) +
                   " out of range (the model "
                   "has " +
                   std::to_string(numSymbols) + " symbols)";
          return;
        }
        tok = Tok::Symbol;
      } else {
        tok = Tok::Bad;
        badWhy = "unknown name '" + std::string(word) + "'";
      }
      return;
    }
    ++pos;
    switch (c) {
    case '+':
      tok = Tok::Plus;
      return;
    case '-':
      tok = Tok::Minus;
      return;
    case '*':
      tok = Tok::Star;
      return;
    case '(':
      tok = Tok::LParen;
      return;
    case ')':
      tok = Tok::RParen;
      return;
    default:
      tok = Tok::Bad;
      badWhy = std::string("unexpected character '") + c + "'";
    }
  }

  bool fail(const std::string &why) {
    if (message.empty())
      message = why + " at column " + std::to_string(tokStart + 1);
    return false;
  }
  bool report(std::string &error) {
    error = "malformed dim expression '" + std::string(text) + "': " + message;
    return false;
  }
  bool expect(Tok t, const char *what) {
    if (tok == Tok::Bad)
      return fail(badWhy);
    if (tok != t)
      return fail(std::string("expected ") + what);
    next();
    return true;
  }

  int32_t emit(DimExpr::Op op, int64_t value, int32_t lhs, int32_t rhs) {
    out.nodes.push_back({op, value, lhs, rhs});
    return static_cast<int32_t>(out.nodes.size() - 1);
  }
  int32_t last() const { return static_cast<int32_t>(out.nodes.size() - 1); }

  bool expr(int depth) {
    if (!term(depth))
      return false;
    while (tok == Tok::Plus || tok == Tok::Minus) {
      DimExpr::Op op = tok == Tok::Plus ? DimExpr::Op::Add : DimExpr::Op::Sub;
      int32_t lhs = last();
      next();
      if (!term(depth))
        return false;
      emit(op, 0, lhs, last());
    }
    return true;
  }

  bool term(int depth) {
    if (!unary(depth))
      return false;
    while (tok == Tok::Star || tok == Tok::FloorDiv || tok == Tok::CeilDiv ||
           tok == Tok::Mod) {
      DimExpr::Op op = tok == Tok::Star       ? DimExpr::Op::Mul
                       : tok == Tok::FloorDiv ? DimExpr::Op::FloorDiv
                       : tok == Tok::CeilDiv  ? DimExpr::Op::CeilDiv
                                              : DimExpr::Op::Mod;
      int32_t lhs = last();
      next();
      if (!unary(depth))
        return false;
      emit(op, 0, lhs, last());
    }
    return true;
  }

  bool unary(int depth) {
    if (depth > kMaxDepth)
      return fail("expression nested too deeply");
    switch (tok) {
    case Tok::Minus:
      next();
      if (!unary(depth + 1))
        return false;
      emit(DimExpr::Op::Neg, 0, last(), -1);
      return true;
    case Tok::Int:
      emit(DimExpr::Op::Const, value, -1, -1);
      next();
      return true;
    case Tok::Symbol:
      emit(DimExpr::Op::Symbol, value, -1, -1);
      next();
      return true;
    case Tok::LParen:
      next();
      return expr(depth + 1) && expect(Tok::RParen, "')'");
    case Tok::Bad:
      return fail(badWhy);
    case Tok::End:
      return fail("expression ends early");
    default:
      return fail("expected a number, a symbol or '('");
    }
  }

  std::string_view text;
  size_t numSymbols;
  DimExpr &out;
  size_t pos = 0, tokStart = 0;
  Tok tok = Tok::End;
  int64_t value = 0;
  std::string badWhy, message;
};

bool DimExpr::parse(std::string_view text, size_t numSymbols, DimExpr &out,
                    std::string &error) {
  return DimExprParser(text, numSymbols, out).run(error);
}

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

bool DimExpr::evaluate(const int64_t *symbols, int64_t &result,
                       std::string &error) const {
  if (nodes.empty()) {
    error = "empty dim expression";
    return false;
  }
  // Nodes are in post-order, so one pass computes each from earlier ones.
  int64_t small[32];
  std::vector<int64_t> large;
  int64_t *v = small;
  if (nodes.size() > 32) {
    large.resize(nodes.size());
    v = large.data();
  }
  auto overflow = [&]() {
    error = "'" + source + "' overflows int64";
    return false;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &n = nodes[i];
    int64_t a = n.lhs >= 0 ? v[n.lhs] : 0, b = n.rhs >= 0 ? v[n.rhs] : 0;
    switch (n.op) {
    case Op::Const:
      v[i] = n.value;
      break;
    case Op::Symbol:
      v[i] = symbols[n.value];
      break;
    case Op::Neg:
      if (__builtin_sub_overflow(int64_t(0), a, &v[i]))
        return overflow();
      break;
    case Op::Add:
      if (__builtin_add_overflow(a, b, &v[i]))
        return overflow();
      break;
    case Op::Sub:
      if (__builtin_sub_overflow(a, b, &v[i]))
        return overflow();
      break;
    case Op::Mul:
      if (__builtin_mul_overflow(a, b, &v[i]))
        return overflow();
      break;
    case Op::FloorDiv:
    case Op::CeilDiv:
    case Op::Mod: {
      if (b == 0) {
        error = "'" + source + "' divides by zero";
        return false;
      }
      if (a == INT64_MIN && b == -1)
        return overflow();
      int64_t q = a / b, r = a % b;
      // C++ truncates toward zero; MLIR floors (and ceils for ceildiv), so
      // the remainder takes the divisor's sign.
      bool inexact = r != 0, negative = (a < 0) != (b < 0);
      if (n.op == Op::FloorDiv)
        v[i] = inexact && negative ? q - 1 : q;
      else if (n.op == Op::CeilDiv)
        v[i] = inexact && !negative ? q + 1 : q;
      else
        v[i] = inexact && (r < 0) != (b < 0) ? r + b : r;
      break;
    }
    }
  }
  result = v[nodes.size() - 1];
  return true;
}

int64_t DimExpr::singleSymbol() const {
  return nodes.size() == 1 && nodes[0].op == Op::Symbol ? nodes[0].value : -1;
}

std::string DimExpr::render(const std::vector<std::string> &names) const {
  std::string s;
  for (size_t i = 0; i < source.size();) {
    bool wordStart =
        i == 0 || !(std::isalnum(static_cast<unsigned char>(source[i - 1])) ||
                    source[i - 1] == '_');
    size_t end = i + 1;
    while (end < source.size() &&
           std::isdigit(static_cast<unsigned char>(source[end])))
      ++end;
    bool atWordEnd = end == source.size() ||
                     !(std::isalnum(static_cast<unsigned char>(source[end])) ||
                       source[end] == '_');
    if (source[i] == 's' && wordStart && end > i + 1 && atWordEnd) {
      size_t k = std::stoull(source.substr(i + 1, end - i - 1));
      s += k < names.size() ? names[k] : source.substr(i, end - i);
      i = end;
    } else {
      s += source[i++];
    }
  }
  return s;
}

//===----------------------------------------------------------------------===//
// The signature
//===----------------------------------------------------------------------===//

std::string ShapeSignature::shapeString(const TensorShape &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i)
      s += ",";
    s += t.shape[i] >= 0 ? std::to_string(t.shape[i]) : t.dimNames[i];
  }
  return s + "]";
}

bool ShapeSignature::fromDescriptor(const MccModelDescriptor &d,
                                    ShapeSignature &out, std::string &error) {
  out = ShapeSignature();
  if (d.num_symbols < 0 || (d.num_symbols > 0 && !d.symbols)) {
    error = "malformed symbol list in descriptor";
    return false;
  }
  for (int64_t k = 0; k < d.num_symbols; ++k) {
    const MccSymbolDesc &s = d.symbols[k];
    if (!s.name || s.lo < 0 || s.hi < s.lo) {
      error = "malformed symbol " + std::to_string(k) + " in descriptor";
      return false;
    }
    out.symbols.push_back({s.name, s.lo, s.hi});
    out.symbolNames.push_back(s.name);
  }
  std::vector<bool> carried(out.symbols.size(), false);
  auto read = [&](const MccTensorDesc *list, int64_t count, bool input,
                  std::vector<TensorShape> &into) {
    const char *role = input ? "input" : "output";
    for (int64_t i = 0; i < count; ++i) {
      const MccTensorDesc &t = list[i];
      TensorShape ts;
      ts.name = t.name;
      if (t.rank > 0 && !t.shape) {
        error = std::string(role) + " '" + ts.name + "' has no shape";
        return false;
      }
      ts.shape.assign(t.shape, t.shape + t.rank);
      ts.exprs.resize(t.rank);
      ts.dimNames.resize(t.rank);
      for (int64_t a = 0; a < t.rank; ++a) {
        std::string where =
            std::string(role) + " '" + ts.name + "' axis " + std::to_string(a);
        const char *expr = t.dim_exprs ? t.dim_exprs[a] : nullptr;
        if (ts.shape[a] >= 0 && !expr)
          continue;
        if (ts.shape[a] != -1 || !expr) {
          error = where + ": dim " + std::to_string(ts.shape[a]) +
                  (expr ? " has an expression" : " has no expression");
          return false;
        }
        std::string why;
        if (!DimExpr::parse(expr, out.symbols.size(), ts.exprs[a], why)) {
          error = where + ": " + why;
          return false;
        }
        if (input) {
          int64_t k = ts.exprs[a].singleSymbol();
          if (k < 0) {
            error =
                where + ": '" + std::string(expr) + "' is not a single symbol";
            return false;
          }
          carried[k] = true;
        }
        ts.dimNames[a] = ts.exprs[a].render(out.symbolNames);
        out.dynamic = true;
      }
      into.push_back(std::move(ts));
    }
    return true;
  };
  if (!read(d.inputs, d.num_inputs, true, out.inputs) ||
      !read(d.outputs, d.num_outputs, false, out.outputs))
    return false;
  for (size_t k = 0; k < carried.size(); ++k)
    if (!carried[k]) {
      error = "symbol '" + out.symbols[k].name + "' is no input's dim";
      return false;
    }
  return true;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

ShapeBinder::ShapeBinder(const ShapeSignature &sig)
    : sig(sig), values(sig.symbols.size(), -1),
      boundBy(sig.symbols.size(), {0, -1}) {}

mcc_status ShapeBinder::bindInput(size_t i, int32_t rank, const int64_t *shape,
                                  std::string &error) {
  const TensorShape &t = sig.inputs[i];
  std::string role = "input " + std::to_string(i) + " ('" + t.name + "')";
  if (rank < 0 || rank > MCC_MAX_RANK) {
    error = role + ": rank " + std::to_string(rank) + " is invalid";
    return MCC_ERROR_SHAPE;
  }
  bool same = static_cast<size_t>(rank) == t.shape.size();
  for (int32_t a = 0; same && a < rank; ++a)
    same = shape[a] >= 0 && (t.shape[a] < 0 || t.shape[a] == shape[a]);
  if (!same) {
    error = role + ": shape " + shapeString(rank, shape) +
            " given, the model expects " + ShapeSignature::shapeString(t);
    return MCC_ERROR_SHAPE;
  }
  for (int32_t a = 0; a < rank; ++a) {
    if (t.shape[a] >= 0)
      continue;
    int64_t k = t.exprs[a].singleSymbol();
    const SymbolBounds &s = sig.symbols[k];
    std::string where = "input '" + t.name + "' axis " + std::to_string(a) +
                        " ('" + s.name + "') is " + std::to_string(shape[a]);
    if (values[k] >= 0 && values[k] != shape[a]) {
      const TensorShape &first = sig.inputs[boundBy[k].first];
      error =
          where + ", but input '" + first.name + "'" +
          (boundBy[k].first == i ? " axis " + std::to_string(boundBy[k].second)
                                 : std::string()) +
          " set '" + s.name + "' to " + std::to_string(values[k]);
      return MCC_ERROR_SHAPE;
    }
    if (shape[a] < s.lo || shape[a] > s.hi) {
      bool above = shape[a] > s.hi;
      error = where + ", " + (above ? "above" : "below") + " its bound " +
              std::to_string(above ? s.hi : s.lo);
      return MCC_ERROR_SHAPE;
    }
    if (values[k] < 0) {
      values[k] = shape[a];
      boundBy[k] = {i, a};
    }
  }
  return MCC_OK;
}

std::string ShapeBinder::boundSymbols() const {
  std::string s;
  for (size_t k = 0; k < values.size(); ++k)
    s +=
        (k ? ", " : "") + sig.symbols[k].name + "=" + std::to_string(values[k]);
  return s;
}

mcc_status ShapeBinder::outputShape(size_t i, int64_t *shape,
                                    std::string &error) const {
  const TensorShape &t = sig.outputs[i];
  for (size_t a = 0; a < t.shape.size(); ++a) {
    if (t.shape[a] >= 0) {
      shape[a] = t.shape[a];
      continue;
    }
    for (int64_t v : values)
      if (v < 0) {
        error = "output shapes need every input bound first";
        return MCC_ERROR_INVALID_ARGUMENT;
      }
    std::string where = "output '" + t.name + "' axis " + std::to_string(a) +
                        " ('" + t.dimNames[a] + "')";
    std::string why;
    if (!t.exprs[a].evaluate(values.data(), shape[a], why)) {
      error = where + ": " + why + " for " + boundSymbols();
      return MCC_ERROR_SHAPE;
    }
    if (shape[a] < 0) {
      error = where + " is " + std::to_string(shape[a]) + " for " +
              boundSymbols() + "; a dim cannot be negative";
      return MCC_ERROR_SHAPE;
    }
  }
  return MCC_OK;
}

} // namespace mcc::rt
