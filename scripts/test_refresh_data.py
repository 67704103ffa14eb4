"""Unit tests of scripts/refresh-data.py over recorded index responses (tests/fixtures/index).

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import importlib.util
import json
import unittest
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "index"
_spec = importlib.util.spec_from_file_location("refresh_data", ROOT / "scripts" / "refresh-data.py")
refresh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(refresh)


def project(name):
    return json.loads((FIXTURES / f"{name}.json").read_text())


def index():
    return refresh.Index(None, replay=FIXTURES)


class PythonRanges(unittest.TestCase):
    def test_torch_2_13_and_2_14_have_no_cp315_wheel_and_2_15_0_drops_3_10(self):
        files = project("torch")["files"]
        for version in ("2.13.0", "2.14.0", "2.14.1"):
            for os_name in ("linux", "windows"):
                self.assertEqual(refresh.python_range(files, version, os_name), ("3.10", "3.14"))
        self.assertEqual(refresh.python_range(files, "2.15.0", "linux"), ("3.11", "3.15"))

    def test_tensorflow_gpu_2_0_0_leaves_python_2_7_out(self):
        files = project("tensorflow-gpu")["files"]
        self.assertEqual(refresh.python_range(files, "2.0.0", "linux"), ("3.5", "3.7"))
        self.assertEqual(refresh.python_range(files, "2.0.0", "windows"), ("3.5", "3.7"))

    def test_a_range_narrower_than_the_wheels_is_not_a_mismatch(self):
        self.assertEqual(refresh.python_status(("3.9", "3.12"), ("3.9", "3.13")), "narrower")
        self.assertIsNone(refresh.python_status(("3.10", "3.15"), ("3.10", "3.14")))


class CompanionPairing(unittest.TestCase):
    def test_exact_pins_and_same_day_releases_pair_torchvision(self):
        idx = index()
        torch, vision = idx.project("torch"), idx.project("torchvision")
        want = {"2.11.0": "0.26.0", "2.13.0": "0.28.0", "2.14.0": "0.29.0",
                "2.14.1": "0.29.1", "2.15.0": "0.29.2"}
        for torch_version, pair in want.items():
            self.assertEqual(refresh.companion_for(idx, vision, torch, torch_version), pair,
                             torch_version)

    def test_specifiers(self):
        self.assertTrue(refresh.admits(">=2.14.0", "2.15.0"))
        self.assertFalse(refresh.admits("==2.14.0", "2.14.1"))
        self.assertTrue(refresh.admits("==2.14.*", "2.14.1"))
        self.assertFalse(refresh.admits(">=2.14.0,<2.15", "2.15.0"))


class CudaLibraries(unittest.TestCase):
    def metadata(self, wheel):
        return (FIXTURES / "metadata" / f"{wheel}.metadata").read_text()

    def test_torch_2_11_0_pins_cudnn_9_19_0_56_for_cuda_13_0(self):
        libs = refresh.cuda_libraries(self.metadata("torch-2.11.0-cp314-cp314-manylinux_2_28_x86_64.whl"))
        self.assertEqual(refresh.cuda_line_of(libs), "13.0")
        self.assertEqual(refresh.cudnn_of(libs), "9.19.0.56")
        self.assertEqual(libs["nvidia-nccl-cu13"], "2.28.9")

    def test_torch_2_15_0_default_build_is_cuda_13_2(self):
        libs = refresh.cuda_libraries(self.metadata("torch-2.15.0-cp315-cp315-manylinux_2_28_x86_64.whl"))
        self.assertEqual(refresh.cuda_line_of(libs), "13.2")
        self.assertEqual(refresh.cudnn_of(libs), "9.26.0.51")


class Distributions(unittest.TestCase):
    def test_tensorflow_gpu_holds_the_gpu_build_before_2_1(self):
        gpu = project("tensorflow-gpu")
        self.assertEqual(refresh.gpu_distribution("2.0.0", gpu), "tensorflow-gpu")
        self.assertEqual(refresh.gpu_distribution("2.1.0", gpu), "tensorflow")


class Releases(unittest.TestCase):
    def test_cuda_toolkit_updates_count_whatever_their_file_names_spell(self):
        versions = refresh.release_versions(project("cuda-toolkit"))
        for v in ("12.8.2", "12.9.2", "13.0.3", "13.1.2", "13.5.0"):
            self.assertIn(v, versions)
        self.assertNotIn("13.4.0rc1", versions)

    def test_uv_wheels_with_their_sha256(self):
        wheels = refresh.uv_wheels(project("uv"), "0.13.10")
        self.assertEqual(set(wheels), {"linux-x86_64", "windows-x86_64"})
        self.assertEqual(wheels["windows-x86_64"]["file"], "uv-0.13.10-py3-none-win_amd64.whl")
        self.assertEqual(len(wheels["linux-x86_64"]["sha256"]), 64)


class Comparison(unittest.TestCase):
    def test_the_old_torch_row_differs_and_the_corrected_one_matches(self):
        row = {"release": "2.14", "versions": ["2.14.0"], "torchvision": {"2.14.0": "0.29.0"},
               "python": {"min": "3.10", "max": "3.15"}, "cudnn": {"13.0": "9.24.0.43"}}
        report = refresh.Report()
        refresh.compare_torch(index(), {"releases": [row]}, report)
        differs = [r for r in report.rows if r[4] == "DIFFERS"]
        self.assertEqual({r[1] for r in differs}, {"python (linux)", "python (windows)"})
        row["python"]["max"] = "3.14"
        report = refresh.Report()
        refresh.compare_torch(index(), {"releases": [row]}, report)
        self.assertFalse([r for r in report.rows if r[4] == "DIFFERS"], report.rows)

    @unittest.skipUnless(find_spec("yaml"), "reading data/*.yaml needs PyYAML")
    def test_write_reproduces_the_corrections_in_a_copy_of_the_data(self):
        import tempfile
        pytorch = (
            'releases:\n'
            '  - release: "2.14"\n'
            '    versions: ["2.14.0"]\n'
            '    torchvision: {"2.14.0": "0.29.0"}\n'
            '    python: {min: "3.10", max: "3.15"}\n'
            '  - release: "2.11"\n'
            '    versions: ["2.11.0"]\n'
            '    torchvision: {"2.11.0": "0.26.0"}\n'
            '    python: {min: "3.10", max: "3.14"}\n'
            '    cudnn: {"12.6": "9.10.2.21", "13.0": "9.17.1.4"}\n'
        )
        tensorflow = (
            'linux:\n'
            '  - {version: "2.0.0", python: {min: "3.3", max: "3.7"}, cudnn: "7.4", cuda: "10.0"}\n'
            'windows:\n'
            '  - {version: "2.0.0", python: {min: "3.5", max: "3.7"}, cudnn: "7.4", cuda: "10.0"}\n'
        )
        with tempfile.TemporaryDirectory() as tmp:
            data, out = Path(tmp) / "data", Path(tmp) / "out"
            data.mkdir()
            (data / "pytorch.yaml").write_text(pytorch)
            (data / "tensorflow.yaml").write_text(tensorflow)
            report = refresh.Report()
            refresh.compare_torch(index(), refresh.load_yaml(data / "pytorch.yaml"), report)
            refresh.compare_tensorflow(index(), refresh.load_yaml(data / "tensorflow.yaml"), report)
            refresh.write_set(data, out, report.fixes)
            torch_rows = refresh.load_yaml(out / "pytorch.yaml")["releases"]
            tf = refresh.load_yaml(out / "tensorflow.yaml")
        self.assertEqual(torch_rows[0]["python"], {"min": "3.10", "max": "3.14"})
        self.assertEqual(torch_rows[1]["cudnn"]["13.0"], "9.19.0.56")
        self.assertEqual(tf["linux"][0]["python"]["min"], "3.5")
        self.assertEqual([r["distribution"] for r in tf["linux"] + tf["windows"]],
                         ["tensorflow-gpu", "tensorflow-gpu"])


if __name__ == "__main__":
    unittest.main()
