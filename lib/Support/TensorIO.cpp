//===- TensorIO.cpp - .npz and ONNX TensorProto reading and writing -------===//

#include "mcc/Support/TensorIO.h"

#include "onnx/onnx_pb.h"

#include <zip.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace mcc {

size_t HostTensor::numElements() const {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

struct DescrEntry {
  const char *descr;
  mcc_dtype dtype;
};
// numpy has no bfloat16: ml_dtypes' bfloat16 saves as a 2-byte void, read
// as bfloat16; makeNpy writes bfloat16 as uint16 bit patterns. ml_dtypes'
// one-byte types (float8, int4, ...) save as a 1-byte void (float8_e5m2 as
// "<f1"): read as bytes, which a small-type input accepts (docs/design/0009).
const DescrEntry kDescrs[] = {
    {"<f4", MCC_FLOAT32},  {"<f8", MCC_FLOAT64},  {"<f2", MCC_FLOAT16},
    {"<i8", MCC_INT64},    {"<i4", MCC_INT32},    {"|i1", MCC_INT8},
    {"|u1", MCC_UINT8},    {"|b1", MCC_BOOL},     {"<i2", MCC_INT16},
    {"<u2", MCC_UINT16},   {"<u4", MCC_UINT32},   {"<u8", MCC_UINT64},
    {"<V2", MCC_BFLOAT16}, {"|V2", MCC_BFLOAT16}, {"|V1", MCC_UINT8},
    {"<V1", MCC_UINT8},    {"<f1", MCC_UINT8},    {"|f1", MCC_UINT8},
};

bool parseNpy(const std::string &name, const std::vector<uint8_t> &bytes,
              HostTensor &t, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = "array '" + name + "': " + why;
    return false;
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return bad("not a .npy array");
  uint8_t major = bytes[6];
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) |
                (static_cast<size_t>(bytes[11]) << 24);
    offset = 12;
  } else {
    return bad("unsupported .npy version " + std::to_string(major));
  }
  if (offset + headerLen > bytes.size())
    return bad("truncated header");
  std::string header(bytes.begin() + offset,
                     bytes.begin() + offset + headerLen);
  auto field = [&](const std::string &key) -> std::string {
    size_t p = header.find("'" + key + "'");
    if (p == std::string::npos)
      return "";
    p = header.find(':', p);
    return p == std::string::npos ? "" : header.substr(p + 1);
  };
  std::string descr = field("descr");
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return bad("header has no descr");
  descr = descr.substr(q1 + 1, q2 - q1 - 1);
  if (!descr.empty() && descr[0] == '=') // native order: little-endian hosts
    descr[0] = descr.size() == 3 && descr[2] == '1' ? '|' : '<';
  bool found = false;
  for (const auto &e : kDescrs)
    if (descr == e.descr) {
      t.dtype = e.dtype;
      found = true;
    }
  if (!found)
    return bad("unsupported dtype '" + descr + "'");
  if (field("fortran_order").find("True") == 1 ||
      field("fortran_order").find("True") == 0)
    return bad("Fortran-ordered arrays are not supported");
  std::string shape = field("shape");
  size_t l = shape.find('('), r = shape.find(')');
  if (l == std::string::npos || r == std::string::npos)
    return bad("header has no shape");
  std::stringstream ss(shape.substr(l + 1, r - l - 1));
  std::string item;
  t.shape.clear();
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos)
      continue;
    t.shape.push_back(std::stoll(item));
  }
  t.name = name;
  size_t want = t.numElements() * mcc_dtype_size(t.dtype);
  size_t dataOffset = offset + headerLen;
  if (bytes.size() - dataOffset < want)
    return bad("data is shorter than its shape " + shapeToString(t.shape));
  t.data.assign(bytes.begin() + dataOffset, bytes.begin() + dataOffset + want);
  return true;
}

std::vector<uint8_t> makeNpy(const HostTensor &t) {
  // bfloat16 as its bit patterns: readable without ml_dtypes, exact, and
  // .view(ml_dtypes.bfloat16) gives the values.
  // The one-byte small types likewise as uint8 bytes (.view(ml_dtypes.X)).
  const char *descr = t.dtype == MCC_BFLOAT16          ? "<u2"
                      : t.dtype >= 17 && t.dtype <= 26 ? "|u1"
                                                       : "<f4";
  for (const auto &e : kDescrs)
    if (e.dtype == t.dtype && t.dtype != MCC_BFLOAT16) {
      descr = e.descr;
      break;
    }
  std::string shape = "(";
  for (int64_t d : t.shape)
    shape += std::to_string(d) + ", ";
  if (t.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (t.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(header.size() & 0xff);
  out.push_back((header.size() >> 8) & 0xff);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

bool readNpz(const std::string &path, std::vector<HostTensor> &tensors,
             std::string &error) {
  if (isDirectory(path)) {
    error = path + ": is a directory, not a .npz file";
    return false;
  }
  int err = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    error = path + ": cannot open as .npz: " + zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return false;
  }
  zip_int64_t n = zip_get_num_entries(z, 0);
  bool ok = true;
  for (zip_int64_t i = 0; ok && i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(z, i, 0, &st) != 0) {
      error = path + ": corrupt archive entry";
      ok = false;
      break;
    }
    std::string name = st.name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".npy")
      name.resize(name.size() - 4);
    std::vector<uint8_t> bytes(st.size);
    zip_file_t *f = zip_fopen_index(z, i, 0);
    if (!f || zip_fread(f, bytes.data(), st.size) !=
                  static_cast<zip_int64_t>(st.size)) {
      error = path + ": cannot read entry '" + name + "'";
      ok = false;
    }
    if (f)
      zip_fclose(f);
    HostTensor t;
    if (ok && !parseNpy(name, bytes, t, error)) {
      error = path + ": " + error;
      ok = false;
    }
    if (ok)
      tensors.push_back(std::move(t));
  }
  zip_discard(z);
  return ok;
}

bool writeNpz(const std::string &path, const std::vector<HostTensor> &tensors,
              std::string &error) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::remove(tmp.c_str());
  int err = 0;
  zip_t *z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) {
    error = path + ": cannot create output file";
    return false;
  }
  std::vector<std::vector<uint8_t>> keep;
  keep.reserve(tensors.size());
  for (const HostTensor &t : tensors) {
    keep.push_back(makeNpy(t));
    zip_source_t *src =
        zip_source_buffer(z, keep.back().data(), keep.back().size(), 0);
    zip_int64_t idx = src ? zip_file_add(z, (t.name + ".npy").c_str(), src,
                                         ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE)
                          : -1;
    if (idx < 0) {
      if (src)
        zip_source_free(src);
      zip_discard(z);
      std::remove(tmp.c_str());
      error = path + ": cannot add array '" + t.name + "'";
      return false;
    }
    zip_set_file_compression(z, idx, ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) {
    error = path + ": cannot write: " + zip_strerror(z);
    zip_discard(z);
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    error = path + ": cannot rename temporary output into place";
    return false;
  }
  return true;
}

bool readTensorProto(const std::string &path, HostTensor &t,
                     std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) {
    error = path + ": not a valid onnx.TensorProto";
    return false;
  }
  t.name = proto.name();
  t.shape.assign(proto.dims().begin(), proto.dims().end());
  switch (proto.data_type()) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::BFLOAT16:
  // float8e4m3fn ... int2, newer than the onnx.proto mcc builds with.
  case 17:
  case 18:
  case 19:
  case 20:
  case 21:
  case 22:
  case 23:
  case 24:
  case 25:
  case 26:
    t.dtype = static_cast<mcc_dtype>(proto.data_type());
    break;
  default:
    error = path + ": unsupported tensor data type " +
            std::to_string(proto.data_type());
    return false;
  }
  size_t n = t.numElements(), esize = mcc_dtype_size(t.dtype);
  t.data.assign(n * esize, 0);
  int bits =
      t.dtype == MCC_UINT4 || t.dtype == MCC_INT4 || t.dtype == MCC_FLOAT4E2M1
          ? 4
      : t.dtype == MCC_UINT2 || t.dtype == MCC_INT2 ? 2
                                                    : 8;
  if (bits < 8) {
    // ONNX packs these, low bits first, in raw_data or one byte per
    // int32_data entry; the runtime takes one element per byte.
    size_t perByte = 8 / bits, packed = (n + perByte - 1) / perByte;
    size_t have = proto.has_raw_data() ? proto.raw_data().size()
                                       : (size_t)proto.int32_data_size();
    if (have != packed) {
      error =
          path + ": packed data does not match shape " + shapeToString(t.shape);
      return false;
    }
    for (size_t i = 0; i < n; ++i) {
      size_t j = i / perByte;
      uint8_t byte = proto.has_raw_data()
                         ? static_cast<uint8_t>(proto.raw_data()[j])
                         : static_cast<uint8_t>(proto.int32_data(j));
      t.data[i] = (byte >> (bits * (i % perByte))) & ((1u << bits) - 1);
    }
    return true;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != n * esize) {
      error = path + ": raw data size does not match shape " +
              shapeToString(t.shape);
      return false;
    }
    std::memcpy(t.data.data(), proto.raw_data().data(), n * esize);
    return true;
  }
  auto mismatch = [&] {
    error =
        path + ": typed data does not match shape " + shapeToString(t.shape);
    return false;
  };
  switch (t.dtype) {
  case MCC_FLOAT32:
    if ((size_t)proto.float_data_size() != n)
      return mismatch();
    std::memcpy(t.data.data(), proto.float_data().data(), n * 4);
    break;
  case MCC_FLOAT64:
    if ((size_t)proto.double_data_size() != n)
      return mismatch();
    std::memcpy(t.data.data(), proto.double_data().data(), n * 8);
    break;
  case MCC_INT64:
    if ((size_t)proto.int64_data_size() != n)
      return mismatch();
    std::memcpy(t.data.data(), proto.int64_data().data(), n * 8);
    break;
  case MCC_UINT32:
  case MCC_UINT64:
    if ((size_t)proto.uint64_data_size() != n)
      return mismatch();
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = proto.uint64_data(i);
      std::memcpy(t.data.data() + i * esize, &v, esize);
    }
    break;
  default: {
    // The other integers, bool, float16 and bfloat16 (bit patterns) all
    // travel in int32_data.
    if ((size_t)proto.int32_data_size() != n)
      return mismatch();
    for (size_t i = 0; i < n; ++i) {
      int32_t v = proto.int32_data(i);
      std::memcpy(t.data.data() + i * esize, &v, esize);
    }
  }
  }
  return true;
}

bool readRunInputs(const std::string &path,
                   const std::vector<std::string> &names,
                   std::vector<HostTensor> &inputs, std::string &error) {
  inputs.clear();
  if (isDirectory(path)) {
    for (size_t i = 0; i < names.size(); ++i) {
      HostTensor t;
      std::string file = path + "/input_" + std::to_string(i) + ".pb";
      if (!readTensorProto(file, t, error))
        return false;
      t.name = names[i];
      inputs.push_back(std::move(t));
    }
    return true;
  }
  std::vector<HostTensor> all;
  if (!readNpz(path, all, error))
    return false;
  std::map<std::string, HostTensor *> byName;
  for (HostTensor &t : all)
    byName[t.name] = &t;
  for (const std::string &n : names) {
    auto it = byName.find(n);
    if (it == byName.end()) {
      std::string have;
      for (const auto &t : all)
        have += (have.empty() ? "" : ", ") + t.name;
      error =
          path + ": no array named '" + n + "' (the file has: " + have + ")";
      return false;
    }
    inputs.push_back(std::move(*it->second));
  }
  return true;
}

bool readTensorFile(const std::string &path, HostTensor &tensor,
                    std::string &error) {
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return path.size() >= n && path.compare(path.size() - n, n, ext) == 0;
  };
  if (endsWith(".pb"))
    return readTensorProto(path, tensor, error);
  if (!endsWith(".npy")) {
    error = path + ": expected a .npy or .pb file";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = path + ": cannot open";
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                             std::istreambuf_iterator<char>());
  return parseNpy(path, bytes, tensor, error);
}

} // namespace mcc
