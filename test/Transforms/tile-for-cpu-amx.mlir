// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu{amx-tiles}))' --verify-each | FileCheck %s --check-prefix=AMX
// RUN: mcc-opt %s --pass-pipeline='builtin.module(func.func(mcc-tile-for-cpu))' --verify-each | FileCheck %s --check-prefix=AVX

// With amx-tiles (--precision bf16x3), a product whose AVX-512 tiles
// mcc-amx-matmul would not take gets tiles it takes, where they cost less:
// mobilenetv3's 160 x 672 x 49 projection ran as 4 x 40 rows by a ragged
// 32 + 17 columns; on the tiles it runs as 2 x 80 rows by all 49 columns
// (one 16-row tile of padding each way: 80 x 64 of 80 x 49).
// Its 112 x 672 x 196 one (AVX-512: 8 tiles of 56 x 49, padded by half on
// the tiles) runs as 2 tiles of 112 x 98.
// AMX-LABEL: func.func @retiled
// AMX: scf.forall ({{.*}}) = (0) to (160) step (80)
// AMX:   linalg.matmul {{.*}} -> tensor<80x49xf32>
// AMX: scf.forall ({{.*}}) = (0) to (196) step (98)
// AMX:   linalg.matmul {{.*}} -> tensor<112x98xf32>
// AVX-LABEL: func.func @retiled
// AVX: scf.forall ({{.*}}) = (0, 0) to (160, 49) step (40, 32)
// AVX:   linalg.matmul {{.*}} -> tensor<40x?xf32>
// AVX: scf.forall ({{.*}}) = (0, 0) to (112, 196) step (56, 49)
// AVX:   linalg.matmul {{.*}} -> tensor<56x49xf32>
func.func @retiled(%a: tensor<160x672xf32>, %b: tensor<672x49xf32>,
                   %a2: tensor<112x672xf32>, %b2: tensor<672x196xf32>)
    -> (tensor<160x49xf32>, tensor<112x196xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<160x49xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<160x49xf32>) -> tensor<160x49xf32>
  %m = linalg.matmul ins(%a, %b : tensor<160x672xf32>, tensor<672x49xf32>) outs(%f : tensor<160x49xf32>) -> tensor<160x49xf32>
  %e2 = tensor.empty() : tensor<112x196xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<112x196xf32>) -> tensor<112x196xf32>
  %m2 = linalg.matmul ins(%a2, %b2 : tensor<112x672xf32>, tensor<672x196xf32>) outs(%f2 : tensor<112x196xf32>) -> tensor<112x196xf32>
  return %m, %m2 : tensor<160x49xf32>, tensor<112x196xf32>
}

// Products of fewer steps whose A is not a weight (here a function without
// mcc.num_inputs: no argument is one) keep the AVX-512 shapes (80 x 240 x
// 196: 40 x 49; a squeeze-excite scale folded into the weight makes A a
// computed value, and such products ran slower at two threads in the tiles'
// fewer shapes); products whose AVX-512 tiles the AMX pass takes, 2 or more
// of them, keep them.
// AMX-LABEL: func.func @kept
// AMX: scf.forall ({{.*}}) = (0, 0) to (80, 196) step (40, 49)
// AMX:   linalg.matmul {{.*}} -> tensor<40x49xf32>
// AMX: scf.forall ({{.*}}) = (0) to (768) step (64)
// AMX:   linalg.matmul {{.*}} -> tensor<128x64xf32>
func.func @kept(%a: tensor<80x240xf32>, %b: tensor<240x196xf32>,
                %a2: tensor<128x768xf32>, %b2: tensor<768x768xf32>)
    -> (tensor<80x196xf32>, tensor<128x768xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<80x196xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<80x196xf32>) -> tensor<80x196xf32>
  %m = linalg.matmul ins(%a, %b : tensor<80x240xf32>, tensor<240x196xf32>) outs(%f : tensor<80x196xf32>) -> tensor<80x196xf32>
  %e2 = tensor.empty() : tensor<128x768xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<128x768xf32>) -> tensor<128x768xf32>
  %m2 = linalg.matmul ins(%a2, %b2 : tensor<128x768xf32>, tensor<768x768xf32>) outs(%f2 : tensor<128x768xf32>) -> tensor<128x768xf32>
  return %m, %m2 : tensor<80x196xf32>, tensor<128x768xf32>
}

// With A a weight (an argument past mcc.num_inputs), a product of K from 96
// takes the tiles' shapes where they cost less: 80 x 200 x 196 (AVX-512: 8
// tiles of 40 x 49, padded by more than a third on the tiles) runs as 2
// tiles of 80 x 98. K below 96 keeps the AVX-512 shapes.
// AMX-LABEL: func.func @weight_a
// AMX: scf.forall ({{.*}}) = (0) to (196) step (98)
// AMX:   linalg.matmul {{.*}} -> tensor<80x98xf32>
// AMX: scf.forall ({{.*}}) = (0, 0) to (80, 196) step (40, 49)
// AVX-LABEL: func.func @weight_a
// AVX: scf.forall ({{.*}}) = (0, 0) to (80, 196) step (40, 49)
// AVX: scf.forall ({{.*}}) = (0, 0) to (80, 196) step (40, 49)
func.func @weight_a(%b: tensor<200x196xf32>, %b2: tensor<80x196xf32>,
                    %w: tensor<80x200xf32>, %w2: tensor<80x80xf32>)
    -> (tensor<80x196xf32>, tensor<80x196xf32>)
    attributes {mcc.num_inputs = 2 : i64} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<80x196xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<80x196xf32>) -> tensor<80x196xf32>
  %m = linalg.matmul ins(%w, %b : tensor<80x200xf32>, tensor<200x196xf32>) outs(%f : tensor<80x196xf32>) -> tensor<80x196xf32>
  %m2 = linalg.matmul ins(%w2, %b2 : tensor<80x80xf32>, tensor<80x196xf32>) outs(%f : tensor<80x196xf32>) -> tensor<80x196xf32>
  return %m, %m2 : tensor<80x196xf32>, tensor<80x196xf32>
}
