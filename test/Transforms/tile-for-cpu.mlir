// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu{target-tiles=8 min-tile-elements=16}))' --verify-each | FileCheck %s

// A small matmul is split into 8 tiles: n into 32-column register blocks,
// then m halved down to 16 rows. The accumulator's fill moves into the tile,
// the reduction (k) stays whole.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.forall ({{.*}}) = (0, 0) to (64, 48) step (16, 32)
// CHECK:   linalg.fill
// CHECK:   linalg.matmul {{.*}} tensor<16x32xf32>, tensor<32x?xf32>
// CHECK:   scf.forall.in_parallel
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %e = tensor.empty() : tensor<64x48xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %m : tensor<64x48xf32>
}

// Products of up to 256 rows keep m whole (each tile packs its B panels
// once) and split n; batch dims go one at a time.
// CHECK-LABEL: func.func @big_products
// CHECK: scf.forall ({{.*}}) = (0) to (768) step (64)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x64xf32>
// CHECK: scf.forall ({{.*}}) in (12)
// CHECK:   linalg.batch_matmul {{.*}} -> tensor<1x128x128xf32>
func.func @big_products(%a: tensor<128x768xf32>, %b: tensor<768x768xf32>,
                        %q: tensor<12x128x64xf32>, %k: tensor<12x64x128xf32>) -> (tensor<128x768xf32>, tensor<12x128x128xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x768xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x768xf32>) -> tensor<128x768xf32>
  %m = linalg.matmul ins(%a, %b : tensor<128x768xf32>, tensor<768x768xf32>) outs(%f : tensor<128x768xf32>) -> tensor<128x768xf32>
  %e2 = tensor.empty() : tensor<12x128x128xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<12x128x128xf32>) -> tensor<12x128x128xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<12x128x64xf32>, tensor<12x64x128xf32>) outs(%f2 : tensor<12x128x128xf32>) -> tensor<12x128x128xf32>
  return %m, %s : tensor<128x768xf32>, tensor<12x128x128xf32>
}

// N = 2304 in tiles of 256 would be 9 tiles, one core idle for the last at
// two threads: 8 tiles of 288 columns instead.
// CHECK-LABEL: func.func @even_tiles
// CHECK: scf.forall ({{.*}}) = (0) to (2304) step (288)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x288xf32>
func.func @even_tiles(%a: tensor<128x768xf32>, %b: tensor<768x2304xf32>) -> tensor<128x2304xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x2304xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x2304xf32>) -> tensor<128x2304xf32>
  %m = linalg.matmul ins(%a, %b : tensor<128x768xf32>, tensor<768x2304xf32>) outs(%f : tensor<128x2304xf32>) -> tensor<128x2304xf32>
  return %m : tensor<128x2304xf32>
}

// N = 784 (a 28 x 28 image) has no even split into multiples of 32 (12
// tiles of 64 and one of 16: 7 against 6 at two threads); 98 = 6 vectors
// and 2 dot-product columns splits it into 8 equal tiles.
// CHECK-LABEL: func.func @even_tiles_off_the_block
// CHECK: scf.forall ({{.*}}) = (0) to (784) step (98)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x98xf32>
func.func @even_tiles_off_the_block(%a: tensor<128x512xf32>, %b: tensor<512x784xf32>) -> tensor<128x784xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x784xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x784xf32>) -> tensor<128x784xf32>
  %m = linalg.matmul ins(%a, %b : tensor<128x512xf32>, tensor<512x784xf32>) outs(%f : tensor<128x784xf32>) -> tensor<128x784xf32>
  return %m : tensor<128x784xf32>
}

// A ragged last n tile would have a dynamic width (784 as 256, 256, 256
// and 16; 196 as 6 x 32 + 4), which keeps the product off the static
// kernels: the widest width down to half the ragged one that splits N
// exactly, with the same m tiles, instead.
// CHECK-LABEL: func.func @no_ragged_tiles
// CHECK: scf.forall ({{.*}}) = (0, 0) to (512, 784) step (128, 196)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x196xf32>
// CHECK: scf.forall ({{.*}}) = (0, 0) to (256, 196) step (128, 49)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x49xf32>
// Likewise m: 672 rows in 12 tiles of 56, not 10 of 64 and one of 32.
// CHECK: scf.forall ({{.*}}) = (0) to (672) step (56)
// CHECK:   linalg.matmul {{.*}} -> tensor<56x196xf32>
// CHECK-NOT: x?xf32>
// CHECK-NOT: tensor<?x
func.func @no_ragged_tiles(%a: tensor<512x128xf32>, %b: tensor<128x784xf32>,
                           %a2: tensor<256x2304xf32>, %b2: tensor<2304x196xf32>,
                           %a3: tensor<672x112xf32>, %b3: tensor<112x196xf32>)
    -> (tensor<512x784xf32>, tensor<256x196xf32>, tensor<672x196xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x784xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<512x784xf32>) -> tensor<512x784xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x128xf32>, tensor<128x784xf32>) outs(%f : tensor<512x784xf32>) -> tensor<512x784xf32>
  %e2 = tensor.empty() : tensor<256x196xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<256x196xf32>) -> tensor<256x196xf32>
  %m2 = linalg.matmul ins(%a2, %b2 : tensor<256x2304xf32>, tensor<2304x196xf32>) outs(%f2 : tensor<256x196xf32>) -> tensor<256x196xf32>
  %e3 = tensor.empty() : tensor<672x196xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<672x196xf32>) -> tensor<672x196xf32>
  %m3 = linalg.matmul ins(%a3, %b3 : tensor<672x112xf32>, tensor<112x196xf32>) outs(%f3 : tensor<672x196xf32>) -> tensor<672x196xf32>
  return %m, %m2, %m3 : tensor<512x784xf32>, tensor<256x196xf32>, tensor<672x196xf32>
}

// A small leading dim (2) is not enough: the next parallel dim is tiled too.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 40) step (1, 10)
// CHECK:   linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %e = tensor.empty() : tensor<2x40xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x40xf32>) outs(%e : tensor<2x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<2x40xf32>
  return %r : tensor<2x40xf32>
}

// Ops below min-tile-elements stay whole.
// CHECK-LABEL: func.func @tiny
// CHECK-NOT: scf.forall
func.func @tiny(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// Dynamic ranges: tile sizes computed at run time by the same rule (here
// ceil(batch / min(batch, 8)) for the first dim).
// CHECK-LABEL: func.func @dynamic_elementwise
// CHECK: tensor.empty
// CHECK: %[[B:.*]] = tensor.dim %arg0
// CHECK: arith.minsi %[[B]], %c8
// CHECK: arith.ceildivui %[[B]]
// CHECK: scf.forall ({{.*}}) = (0, 0) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}})
// CHECK:   linalg.generic
func.func @dynamic_elementwise(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A product with a dynamic M is always tiled over m (64 rows assumed when
// choosing, then narrowed with n to reach 8 tiles).
// CHECK-LABEL: func.func @dynamic_matmul
// CHECK: scf.forall ({{.*}}) = (0, 0) to (%{{.*}}, 256) step (64, 32)
// CHECK:   linalg.fill
// CHECK:   linalg.matmul {{.*}} -> tensor<?x32xf32>
func.func @dynamic_matmul(%a: tensor<?x64xf32>, %b: tensor<64x256xf32>) -> tensor<?x256xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x256xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x256xf32>) -> tensor<?x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x256xf32>) outs(%f : tensor<?x256xf32>) -> tensor<?x256xf32>
  return %r : tensor<?x256xf32>
}

// Depthwise convolutions tile over channels first: 2 channels for 8 tiles
// means 4 row tiles each; output rows (ow) stay whole for the vector kernel.
// CHECK-LABEL: func.func @depthwise
// CHECK: scf.forall ({{.*}}) = (0, 0) to (16, 2) step (4, 1)
// CHECK:   linalg.depthwise_conv_2d_nchw_chw {{.*}} -> tensor<1x1x4x16xf32>
func.func @depthwise(%x: tensor<1x2x18x18xf32>, %w: tensor<2x3x3xf32>) -> tensor<1x2x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x2x18x18xf32>, tensor<2x3x3xf32>) outs(%f : tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  return %r : tensor<1x2x16x16xf32>
}


// Grouped convolutions tile over groups first: 2 groups for 8 tiles means
// 4 row tiles each; output rows stay whole for the vector kernel.
// CHECK-LABEL: func.func @grouped_conv
// CHECK: scf.forall ({{.*}}) = (0, 0) to (2, 16) step (1, 4)
// CHECK:   linalg.conv_2d_ngchw_gfchw {{.*}} -> tensor<1x1x4x4x16xf32>
func.func @grouped_conv(%x: tensor<1x2x4x18x18xf32>, %w: tensor<2x4x4x3x3xf32>) -> tensor<1x2x4x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  %r = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x2x4x18x18xf32>, tensor<2x4x4x3x3xf32>) outs(%f : tensor<1x2x4x16x16xf32>) -> tensor<1x2x4x16x16xf32>
  return %r : tensor<1x2x4x16x16xf32>
}

// A reduction with a small output but a large plane per output (a global
// average pool: 12 channels of 4x4, 192 iterations) is tiled over its
// channels; the planes stay whole. One with 16 iterations stays whole.
// CHECK-LABEL: func.func @pooling
// CHECK: scf.forall
// CHECK:   linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: tensor<1x{{[0-9]+}}x4x4xf32>
// CHECK-LABEL: func.func @small_pooling
// CHECK-NOT: scf.forall
#plane = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
func.func @pooling(%a: tensor<1x12x4x4xf32>, %init: tensor<1x12xf32>) -> tensor<1x12xf32> {
  %r = linalg.generic {indexing_maps = [#plane, #chan], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a : tensor<1x12x4x4xf32>) outs(%init : tensor<1x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x12xf32>
  return %r : tensor<1x12xf32>
}
func.func @small_pooling(%a: tensor<1x4x2x2xf32>, %init: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %r = linalg.generic {indexing_maps = [#plane, #chan], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a : tensor<1x4x2x2xf32>) outs(%init : tensor<1x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

#full = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// A product whose only user is an elementwise generic on its 2-D space: the
// generic is tiled with the product's tile sizes and the product (with its
// fill) fused into each tile, right before the generic's tile.
// CHECK-LABEL: func.func @product_epilogue
// CHECK: scf.forall ({{.*}}) = (0, 0) to (64, 48) step (16, 32)
// CHECK:   linalg.fill
// CHECK:   %[[P:.*]] = linalg.matmul {{.*}} -> tensor<16x?xf32>
// CHECK:   linalg.generic {{.*}} ins(%[[P]], {{.*}} : tensor<16x?xf32>, tensor<16xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK-NOT: linalg.matmul
func.func @product_epilogue(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>, %bias: tensor<64xf32>) -> tensor<64x48xf32> {
  %e = tensor.empty() : tensor<64x48xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%f : tensor<64x48xf32>) -> tensor<64x48xf32>
  %o = tensor.empty() : tensor<64x48xf32>
  %g = linalg.generic {indexing_maps = [#full, #row, #full], iterator_types = ["parallel", "parallel"]}
      ins(%m, %bias : tensor<64x48xf32>, tensor<64xf32>) outs(%o : tensor<64x48xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.maximumf %0, %z : f32
    linalg.yield %1 : f32
  } -> tensor<64x48xf32>
  return %g : tensor<64x48xf32>
}

// A depthwise convolution whose only user is an elementwise generic (its
// bias and activation): the generic is tiled over channels as the
// convolution would be, and the convolution and its fill are fused into
// each tile, right before the generic's tile.
// CHECK-LABEL: func.func @depthwise_epilogue
// CHECK: scf.forall
// CHECK:   linalg.fill
// CHECK:   %[[D:.*]] = linalg.depthwise_conv_2d_nchw_chw
// CHECK:   linalg.generic {{.*}} ins(%[[D]], {{.*}})
// CHECK:   scf.forall.in_parallel
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
func.func @depthwise_epilogue(%x: tensor<1x32x30x30xf32>, %w: tensor<32x3x3xf32>, %bias: tensor<32x1x1xf32>) -> tensor<1x32x28x28xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x28x28xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x32x28x28xf32>) -> tensor<1x32x28x28xf32>
  %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x32x30x30xf32>, tensor<32x3x3xf32>) outs(%f : tensor<1x32x28x28xf32>) -> tensor<1x32x28x28xf32>
  %o = tensor.empty() : tensor<1x32x28x28xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c, 0, 0)>, affine_map<(n, c, h, w) -> (n, c, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d, %bias : tensor<1x32x28x28xf32>, tensor<32x1x1xf32>) outs(%o : tensor<1x32x28x28xf32>) {
  ^bb0(%v: f32, %bv: f32, %out: f32):
    %0 = arith.addf %v, %bv : f32
    %1 = arith.maximumf %0, %z : f32
    linalg.yield %1 : f32
  } -> tensor<1x32x28x28xf32>
  return %g : tensor<1x32x28x28xf32>
}

// A grouped convolution (a 3-channel stem as one group) and its activation:
// the generic is tiled over output rows as the convolution would be, with
// the convolution and its fill fused into each tile.
// CHECK-LABEL: func.func @grouped_epilogue
// CHECK: scf.forall
// CHECK:   linalg.fill
// CHECK:   %[[C:.*]] = linalg.conv_2d_ngchw_gfchw {{.*}} -> tensor<1x1x16x2x16xf32>
// CHECK:   linalg.generic {{.*}} ins(%[[C]] : tensor<1x1x16x2x16xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @grouped_epilogue(%x: tensor<1x1x3x18x18xf32>, %w: tensor<1x16x3x3x3xf32>) -> tensor<1x1x16x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x16x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1x16x16x16xf32>) -> tensor<1x1x16x16x16xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x1x3x18x18xf32>, tensor<1x16x3x3x3xf32>) outs(%f : tensor<1x1x16x16x16xf32>) -> tensor<1x1x16x16x16xf32>
  %o = tensor.empty() : tensor<1x1x16x16x16xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(n, g, f, h, w) -> (n, g, f, h, w)>, affine_map<(n, g, f, h, w) -> (n, g, f, h, w)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x1x16x16x16xf32>) outs(%o : tensor<1x1x16x16x16xf32>) {
  ^bb0(%v: f32, %out: f32):
    %0 = arith.maximumf %v, %z : f32
    linalg.yield %0 : f32
  } -> tensor<1x1x16x16x16xf32>
  return %g : tensor<1x1x16x16x16xf32>
}

// Taller products: m in 128-row tiles with n whole when that makes enough
// tiles (each m tile packs B again); 64-row tiles when it does not or when
// the product is narrow (49 columns).
// CHECK-LABEL: func.func @tall_products
// CHECK: scf.forall ({{.*}}) = (0) to (1024) step (128)
// CHECK:   linalg.matmul {{.*}} -> tensor<128x196xf32>
// CHECK: scf.forall ({{.*}}) = (0) to (2048) step (64)
// CHECK:   linalg.matmul {{.*}} -> tensor<64x49xf32>
func.func @tall_products(%w: tensor<1024x256xf32>, %x: tensor<256x196xf32>,
                         %w2: tensor<2048x512xf32>, %x2: tensor<512x49xf32>)
    -> (tensor<1024x196xf32>, tensor<2048x49xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x196xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1024x196xf32>) -> tensor<1024x196xf32>
  %m = linalg.matmul ins(%w, %x : tensor<1024x256xf32>, tensor<256x196xf32>) outs(%f : tensor<1024x196xf32>) -> tensor<1024x196xf32>
  %e2 = tensor.empty() : tensor<2048x49xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<2048x49xf32>) -> tensor<2048x49xf32>
  %m2 = linalg.matmul ins(%w2, %x2 : tensor<2048x512xf32>, tensor<512x49xf32>) outs(%f2 : tensor<2048x49xf32>) -> tensor<2048x49xf32>
  return %m, %m2 : tensor<1024x196xf32>, tensor<2048x49xf32>
}
