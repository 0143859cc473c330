//! Kernel benchmarks: `cargo bench` (or `cargo bench -- matmul` for one group).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrograd::kernels::elementwise;
use ferrograd::kernels::matmul::{matmul, Mat};
use ferrograd::kernels::reduce;
use ferrograd::layout::Layout;
use std::hint::black_box;

fn bench_elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise_mul_f32");
    for n in [16usize, 4096, 1 << 16, 1 << 18, 1 << 20, 1 << 22] {
        let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
        let l = Layout::contiguous(vec![n]);
        g.throughput(Throughput::Bytes((3 * n * 4) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bch, _| {
            bch.iter(|| elementwise::binary(black_box(&a), &l, black_box(&b), &l, |x, y| x * y))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("elementwise_strided_add_f32");
    let n = 1024;
    let a: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let lt = Layout::contiguous(vec![n, n]).transpose(0, 1);
    let l = Layout::contiguous(vec![n, n]);
    g.throughput(Throughput::Bytes((3 * n * n * 4) as u64));
    g.bench_function("1024x1024_transposed", |bch| {
        bch.iter(|| elementwise::binary(black_box(&a), &lt, black_box(&a), &l, |x, y| x + y))
    });
    g.finish();
}

fn bench_reduce(c: &mut Criterion) {
    let mut g = c.benchmark_group("sum_f32");
    for n in [4096usize, 1 << 22] {
        let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        g.throughput(Throughput::Bytes((n * 4) as u64));
        g.bench_with_input(BenchmarkId::new("all", n), &n, |bch, &n| {
            bch.iter(|| reduce::sum(black_box(&a), 1, n, 1))
        });
        let rows = 64;
        g.bench_with_input(BenchmarkId::new("dim0_of_64_rows", n), &n, |bch, &n| {
            bch.iter(|| reduce::sum(black_box(&a), 1, rows, n / rows))
        });
    }
    g.finish();
}

fn bench_matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_f32");
    for n in [64usize, 256, 1024] {
        let a: Vec<f32> = (0..n * n).map(|i| (i % 13) as f32 * 0.1).collect();
        let b: Vec<f32> = (0..n * n).map(|i| (i % 11) as f32 * 0.1).collect();
        let mut d = vec![0.0f32; n * n];
        g.throughput(Throughput::Elements((2 * n * n * n) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bch, &n| {
            bch.iter(|| {
                let am = Mat {
                    data: &a,
                    offset: 0,
                    rs: n,
                    cs: 1,
                };
                let bm = Mat {
                    data: &b,
                    offset: 0,
                    rs: n,
                    cs: 1,
                };
                matmul(n, n, n, am, bm, black_box(&mut d), false);
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = bench_elementwise, bench_reduce, bench_matmul
}
criterion_main!(benches);
